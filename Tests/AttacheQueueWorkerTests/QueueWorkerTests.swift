import Attache
import AttacheEnrichment
import AttacheFetch
import AttacheOrigin
import AttachePayload
@testable import AttacheQueueWorker
import AttacheSupport
import AttacheTenants
import AttacheTesting
import Logging
import ServiceLifecycle
import Testing

/// Against a real nats-server with JetStream (`make test-deps`), on loopback.
@Suite(.serialized) struct QueueWorkerTests {
    static let quiet = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

    /// A worker consuming from `server` until `body` returns; what it published, read back from
    /// ATTACHE_OUT, is handed to `body` through `outputs`.
    func withWorker(_ server: NATSServer, origin: Origin, deadline: Duration = Fixtures.generousDeadline,
                    policy: DeadlinePolicy? = nil, tenants: [Tenant]? = nil, maxDeliver: Int? = nil,
                    conversions: (decoder: HeldConversions, wait: Duration, ackWait: Duration)? = nil,
                    _ body: (NATSConnection) async throws -> Void) async throws {
        var options = Enrichment.Configuration()
        options.storage.directory = try makeTempDirectory()
        options.fetch.policy.allowed = [CIDR("127.0.0.1/32")!]
        options.runtime.deadlinePolicy = policy ?? DeadlinePolicy(default: deadline)
        options.cache = MediaCache.Configuration(timeToLive: .seconds(60), maxEntries: 100, warmThrough: conversions == nil ? nil : .seconds(30))
        options.media.conversionWait = conversions?.wait
        let enrichment = try Enrichment(configuration: options, logger: Self.quiet, decoder: conversions?.decoder)
        var configuration = QueueWorker.Configuration(nats: NATSOptions(url: server.url))
        if let conversions {
            configuration.ackWait = conversions.ackWait
            configuration.publishTimeout = .seconds(1)
        }
        if let maxDeliver { configuration.maxDeliver = maxDeliver }
        let worker = QueueWorker(configuration: configuration, enrichment: enrichment,
                                 tenants: try tenants.map { try Tenants($0, makeScope: Tenants.scope(in: enrichment)) }, logger: Self.quiet)
        let group = ServiceGroup(configuration: .init(services: [worker], logger: Self.quiet))
        let client = try NATSConnection(NATSOptions(url: server.url))
        _ = try client.ensureStream("ATTACHE_IN", subject: "attache.in", duplicateWindow: .seconds(120))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            do {
                try await body(client)
            } catch {
                await group.triggerGracefulShutdown()
                throw error
            }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        enrichment.shutdown()
    }

    struct Output {
        var id: String, outcome: String, bytes: [UInt8]
        /// The budget the worker gave the payload, in milliseconds.
        var deadline: String?
    }

    /// Reads ATTACHE_OUT until `count` messages came (or `within` passed): (source id, outcome, bytes).
    func outputs(_ client: NATSConnection, count: Int, within: Duration = .seconds(30)) async throws -> [Output] {
        let pool = BlockingPool(threads: 1, name: "test-reader")
        return try await pool.run { _ in
            _ = try client.ensureStream("ATTACHE_OUT", subject: "attache.out", duplicateWindow: .seconds(300))
            let sub = try client.pullSubscribe(stream: "ATTACHE_OUT", subject: "attache.out", durable: "test-reader",
                                               ackWait: .seconds(30), maxDeliver: 1, maxAckPending: 10_000)
            var out: [Output] = []
            let end = ContinuousClock.now + within
            while out.count < count, ContinuousClock.now < end {
                for m in try sub.fetch(batch: 256, timeout: .milliseconds(500)) {
                    out.append(Output(id: m.header("Attache-Source-Id") ?? "", outcome: m.header("Attache-Outcome") ?? "", bytes: m.data,
                                      deadline: m.header(DeadlinePolicy.header)))
                    m.ack()
                }
            }
            // Anything more would be a second output for some input.
            for m in try sub.fetch(batch: 256, timeout: .milliseconds(500)) {
                out.append(Output(id: m.header("Attache-Source-Id") ?? "", outcome: m.header("Attache-Outcome") ?? "", bytes: m.data,
                                      deadline: m.header(DeadlinePolicy.header)))
            }
            return out
        }
    }

    func publish(_ client: NATSConnection, _ bytes: [UInt8], id: String, deadlineMs: Int? = nil) async throws {
        try await publish(client, bytes, id: id, deadlineHeader: deadlineMs.map(String.init))
    }

    func publish(_ client: NATSConnection, _ bytes: [UInt8], id: String, deadlineHeader: String?, tenant: String? = nil) async throws {
        var headers = [("Nats-Msg-Id", id)]
        if let deadlineHeader { headers.append((DeadlinePolicy.header, deadlineHeader)) }
        if let tenant { headers.append((QueueWorker.tenantHeader, tenant)) }
        let pool = BlockingPool(threads: 1, name: "test-publisher"), sent = headers
        _ = try await pool.run { _ in try client.publish("attache.in", bytes, headers: sent, timeout: .seconds(5)) }
    }

    @Test func everyMessageComesOutOnceWithItsIdAndOutcome() async throws {
        let origin = try Origin(root: Fixtures.mediaDirectory)
        defer { origin.stop() }
        try await NATSServer.with { server in
            try await withWorker(server, origin: origin) { client in
                for i in 0..<40 {
                    let payload = #"{"aps":{"alert":"n\#(i)","mutable-content":1},"image-url":"http://127.0.0.1:\#(origin.port)/photo.jpg"}"#
                    try await publish(client, Array(payload.utf8), id: "p\(i)")
                }
                try await publish(client, Array("not json".utf8), id: "bad")
                let out = try await outputs(client, count: 41)
                #expect(out.count == 41)
                #expect(Set(out.map(\.id)).count == 41)
                #expect(out.filter { $0.id.hasPrefix("p") }.allSatisfy { $0.outcome == "enriched" })
                let bad = out.first { $0.id == "bad" }
                #expect(bad?.outcome == "fallback; reason=invalid-payload")
                #expect(bad?.bytes == Array("not json".utf8))
                // One download for forty payloads: the cache.
                #expect(origin.statistics.requests == 1)
            }
        }
    }

    /// A message whose movie is still being converted at its deadline waits for the conversion,
    /// for longer than the ack wait: in-progress acks keep the stream from delivering it again
    /// (a redelivery, already late, would put the original out first, and the movie's publish
    /// would then be dropped as a duplicate).
    @Test func aMessageWaitsForItsConversionPastTheAckWait() async throws {
        let origin = try Origin(root: Fixtures.mediaDirectory)
        defer { origin.stop() }
        let decoder = HeldConversions()
        defer { decoder.release() }
        try await NATSServer.with { server in
            // The deadline leaves a busy machine time to start the conversion (the poster first);
            // the ack wait is shorter than the wait that follows it.
            try await withWorker(server, origin: origin, deadline: .seconds(8),
                                 conversions: (decoder, wait: .seconds(120), ackWait: .seconds(10))) { client in
                let payload = #"{"aps":{"alert":"clip","mutable-content":1},"media-url":"http://127.0.0.1:\#(origin.port)/clip-vp9.webm"}"#
                try await publish(client, Array(payload.utf8), id: "clip")
                // Held past two ack waits from the delivery.
                try await Task.sleep(for: .seconds(22))
                #expect(decoder.conversions.withLock { $0 } == 1)
                decoder.release()
                let out = try await outputs(client, count: 1)
                #expect(out.count == 1)
                #expect(out.first?.outcome == "enriched")
                let attachment = try Payload(bytes: try #require(out.first?.bytes)).root["attachments"]?.arrayValue?.first?.objectValue
                #expect(attachment?["type"]?.stringValue == "public.mpeg-4")
                #expect(origin.statistics.requests == 1)
            }
        }
    }

    static func tenants() throws -> [Tenant] {
        [Tenant(name: "acme", tokenHashes: [], hosts: try HostAllowlist(["127.0.0.1"])),
         Tenant(name: "beta", tokenHashes: [], hosts: try HostAllowlist(["localhost"]), rate: .init(perSecond: 1, burst: 1))]
    }

    /// With tenants, a message is its `Attache-Tenant` header's: enriched in that tenant's scope
    /// (its hosts, its store prefix); without one of the file, the original goes out. A tenant past
    /// its rate gets its messages back later: each still comes out once, and is enriched.
    @Test func messagesAreTheirTenantsAndComeOutOnceEvenPastARate() async throws {
        let origin = try Origin(root: Fixtures.mediaDirectory)
        defer { origin.stop() }
        let image = #"{"aps":{"alert":"t","mutable-content":1},"image-url":"http://127.0.0.1:\#(origin.port)/photo.jpg"}"#
        try await NATSServer.with { server in
            try await withWorker(server, origin: origin, tenants: try Self.tenants()) { client in
                try await publish(client, Array(image.utf8), id: "acme", deadlineHeader: nil, tenant: "acme")
                try await publish(client, Array(image.utf8), id: "beta-image", deadlineHeader: nil, tenant: "beta")
                try await publish(client, Array(image.utf8), id: "none", deadlineHeader: nil)
                try await publish(client, Array(image.utf8), id: "zeta", deadlineHeader: nil, tenant: "zeta")
                for i in 0..<3 {
                    try await publish(client, Array(#"{"aps":{"alert":"b\#(i)","mutable-content":1}}"#.utf8), id: "beta\(i)",
                                      deadlineHeader: nil, tenant: "beta")
                }
                // A refused message is handed back to the stream for the second its rate names, and
                // goes round again until a token is free: on a loaded machine one came out after
                // 30 s. Room for that, and for one whose hand-back was lost (redelivered after the
                // ack wait, 30 s): either way it comes out once.
                let out = try await outputs(client, count: 7, within: .seconds(75))
                #expect(out.count == 7)
                #expect(Set(out.map(\.id)).count == 7)
                let byID = Dictionary(uniqueKeysWithValues: out.map { ($0.id, $0) })
                #expect(byID["acme"]?.outcome == "enriched")
                let acmeOut = String(decoding: byID["acme"].map(\.bytes) ?? [], as: UTF8.self)
                #expect(acmeOut.contains("/acme/"))
                #expect(byID["beta-image"]?.outcome == "fallback; reason=host-not-allowed")
                for id in ["none", "zeta"] {
                    #expect(byID[id]?.outcome == "fallback; reason=unknown-tenant")
                    #expect(byID[id]?.bytes == Array(image.utf8))
                }
                for i in 0..<3 { #expect(byID["beta\(i)"]?.outcome == "passthrough; reason=no-media") }
            }
        }
    }

    /// On the last delivery the stream allows, a tenant past its limits gets the original out: a
    /// limit never loses a payload.
    @Test func pastItsLimitsOnTheLastDeliveryTheOriginalGoesOut() async throws {
        let origin = try Origin(root: Fixtures.mediaDirectory)
        defer { origin.stop() }
        try await NATSServer.with { server in
            try await withWorker(server, origin: origin, tenants: try Self.tenants(), maxDeliver: 1) { client in
                for i in 0..<3 {
                    try await publish(client, Array(#"{"aps":{"alert":"b\#(i)","mutable-content":1}}"#.utf8), id: "beta\(i)",
                                      deadlineHeader: nil, tenant: "beta")
                }
                let out = try await outputs(client, count: 3)
                #expect(out.count == 3)
                #expect(out.filter { $0.outcome == "passthrough; reason=no-media" }.count == 1)
                #expect(out.filter { $0.outcome == "fallback; reason=tenant-limited" }.count == 2)
            }
        }
    }

    /// Time in the stream counts: a message whose deadline passed before a worker took it goes out
    /// as the original, reason timeout, without a fetch.
    @Test func aMessageAlreadyLateGoesOutAsTheOriginalAtOnce() async throws {
        let origin = try Origin(root: Fixtures.mediaDirectory)
        defer { origin.stop() }
        try await NATSServer.with { server in
            let payload = Array(#"{"aps":{"alert":"late","mutable-content":1},"image-url":"http://127.0.0.1:\#(origin.port)/photo.jpg"}"#.utf8)
            let client = try NATSConnection(NATSOptions(url: server.url))
            _ = try client.ensureStream("ATTACHE_IN", subject: "attache.in", duplicateWindow: .seconds(120))
            try await publish(client, payload, id: "late", deadlineMs: 50)
            try await Task.sleep(for: .milliseconds(300))
            try await withWorker(server, origin: origin) { client in
                let out = try await outputs(client, count: 1)
                #expect(out.count == 1)
                #expect(out.first?.outcome == "fallback; reason=timeout")
                #expect(out.first?.bytes == payload)
                #expect(origin.statistics.requests == 0)
            }
        }
    }

    /// A worker that published and died before its ack: the redelivery's output is dropped by the
    /// output stream (same Nats-Msg-Id), so the input still has one output.
    @Test func aRepublishAfterACrashIsDropped() async throws {
        let origin = try Origin(root: Fixtures.mediaDirectory)
        defer { origin.stop() }
        try await NATSServer.with { server in
            try await withWorker(server, origin: origin) { client in
                let payload = Array(#"{"aps":{"alert":"x"}}"#.utf8)
                // What the dead worker published.
                _ = try client.ensureStream("ATTACHE_OUT", subject: "attache.out", duplicateWindow: .seconds(300))
                let pool = BlockingPool(threads: 1, name: "test-publisher")
                _ = try await pool.run { _ in
                    try client.publish("attache.out", payload, headers: [("Nats-Msg-Id", "once"), ("Attache-Source-Id", "once"),
                                                                         ("Attache-Outcome", "passthrough; reason=not-mutable")],
                                       timeout: .seconds(5))
                }
                try await publish(client, payload, id: "once")
                try await publish(client, payload, id: "other")
                let out = try await outputs(client, count: 2)
                #expect(out.map(\.id).sorted() == ["once", "other"])
            }
        }
    }

    /// Streams are made when missing — the output's duplicate window outlasting ack wait × max
    /// deliveries — and used as they are when present (the worker then warns of a short window).
    @Test func streamsAreMadeWithALongEnoughWindowOrUsedAsTheyAre() async throws {
        try await NATSServer.with { server in
            let pool = BlockingPool(threads: 1, name: "test-connect")
            let configuration = QueueWorker.Configuration(nats: NATSOptions(url: server.url))
            let made = try await pool.run { _ in try QueueWorker.connect(configuration, logger: Self.quiet).outputWindow }
            #expect(made == configuration.requiredDuplicateWindow)
            var other = configuration
            other.outputStream = "SHORT_OUT"
            other.outputSubject = "short.out"
            let client = try NATSConnection(NATSOptions(url: server.url))
            _ = try client.ensureStream("SHORT_OUT", subject: "short.out", duplicateWindow: .seconds(10))
            let short = other
            let found = try await pool.run { _ in try QueueWorker.connect(short, logger: Self.quiet).outputWindow }
            #expect(found == .seconds(10))
        }
    }

    @Test func deadlinesCountFromThePublishTime() {
        let now: Int64 = 1_000_000_000_000
        #expect(QueueWorker.remaining(budget: .seconds(10), publishedNs: now - 4_000_000_000, nowNs: now) == .seconds(6))
        #expect(QueueWorker.remaining(budget: .seconds(1), publishedNs: now - 4_000_000_000, nowNs: now) < .zero)
        #expect(QueueWorker.remaining(budget: .seconds(3), publishedNs: nil, nowNs: now) == .seconds(3))
        var c = QueueWorker.Configuration(nats: NATSOptions(url: "nats://127.0.0.1:1"))
        #expect(c.longestBudget == .seconds(24))  // 30 s ack wait − 5 s publish − 1 s
        c.ackWait = .seconds(2)
        #expect(c.longestBudget == .seconds(1))
    }
}
