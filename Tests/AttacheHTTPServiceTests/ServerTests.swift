import AttacheHTTPKit
import Attache
import AttacheEnrichment
import AttacheFetch
import AttacheHTTPService
import AttacheOperations
import AttacheOrigin
import AttacheSupport
import AttacheTestTraits
import AttacheTesting
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import Prometheus
import Testing

/// A service on an origin serving Samples/media, with its own metrics registry.
struct ServiceHarness {
    let origin: Origin
    let mediaDirectory: String
    let enrichment: Enrichment
    let registry = PrometheusCollectorRegistry()
    let server: ServerConfiguration

    init(tokens: [String] = [], maxInFlight: Int = 64, deadline: Duration = Fixtures.generousDeadline, cache: Bool = true,
         maxMediaJobs: Int = 32, connections: ConnectionLimits = ConnectionLimits(), minimumFreeBytes: Int = 0) throws {
        origin = try Origin(root: Fixtures.mediaDirectory)
        mediaDirectory = try makeTempDirectory()
        var options = Enrichment.Configuration()
        options.storage.directory = mediaDirectory
        options.fetch.policy.allowed = [CIDR("127.0.0.1/32")!]
        options.runtime.deadlinePolicy.default = deadline
        options.storage.publicBaseURL = "https://cdn.example.com/media"
        options.cache = cache ? MediaCache.Configuration() : nil
        options.maxMediaJobs = maxMediaJobs
        enrichment = try Enrichment(configuration: options, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        server = ServerConfiguration(host: "127.0.0.1", port: 0, maxInFlight: maxInFlight,
                                     tokens: tokens, minimumFreeBytes: minimumFreeBytes,
                                     connections: connections)
    }

    var app: any ApplicationProtocol {
        buildApplication(configuration: server, enrichment: enrichment, registry: registry,
                         metrics: EnrichmentMetrics(factory: PrometheusMetricsFactory.attache(registry: registry)),
                         logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    func payload(_ json: String) -> ByteBuffer {
        ByteBuffer(string: json.replacingAll("ORIGIN", with: "http://127.0.0.1:\(origin.port)"))
    }

    func stop() {
        enrichment.shutdown()
        origin.stop()
    }
}

extension HTTPField.Name {
    static let testOutcome = Self("Attache-Outcome")!
    static let testRequestID = Self("X-Request-Id")!
    static let testDeadline = Self("Attache-Deadline-Ms")!
    static let testServerTiming = Self("Server-Timing")!
}


let fcmPayload = #"{"aps":{"alert":"x","mutable-content":1},"fcm_options":{"image":"ORIGIN/photo.jpg"}}"#

@Suite struct RouterTests {
    @Test func enrichAnswersWithThePayloadAndItsOutcome() async throws {
        let h = try ServiceHarness()
        defer { h.stop() }
        try await h.app.test(.router) { client in
            try await client.execute(uri: "/v1/enrich", method: .post, headers: [.testRequestID: "req-1"], body: h.payload(fcmPayload)) { r in
                #expect(r.status == .ok)
                #expect(r.headers[.testOutcome] == "enriched")
                #expect(r.headers[.testRequestID] == "req-1")
                let timing = try #require(r.headers[.testServerTiming])
                #expect(timing.wholeMatch(of: /fetch;dur=\d+\.\d, inspect;dur=\d+\.\d, render;dur=\d+\.\d, store;dur=\d+\.\d, total;dur=\d+\.\d/) != nil,
                        "\(timing)")
                #expect(String(buffer: r.body).contains("https://cdn.example.com/media/"))
            }
        }
    }

    @Test func passthroughAndFallbackAreAlso200() async throws {
        let h = try ServiceHarness()
        defer { h.stop() }
        try await h.app.test(.router) { client in
            let plain = #"{"aps":{"alert":"no mutable-content"},"k":1.0}"#
            try await client.execute(uri: "/v1/enrich", method: .post, body: ByteBuffer(string: plain)) { r in
                #expect(r.status == .ok)
                #expect(r.headers[.testOutcome] == "passthrough; reason=not-mutable")
                #expect(String(buffer: r.body) == plain)
                #expect(r.headers[.testRequestID]?.isEmpty == false)  // generated when not sent
            }
            let broken = #"{"aps":{"alert":"x","mutable-content":1},"image-url":"ORIGIN/truncated.jpg"}"#
            try await client.execute(uri: "/v1/enrich", method: .post, body: h.payload(broken)) { r in
                #expect(r.status == .ok)
                #expect(r.headers[.testOutcome] == "fallback; reason=invalid-media")
                #expect(r.body == h.payload(broken))
            }
        }
    }

    @Test func notAnObjectIs400AndTooBigIs413() async throws {
        let h = try ServiceHarness()
        defer { h.stop() }
        try await h.app.test(.router) { client in
            try await client.execute(uri: "/v1/enrich", method: .post, body: ByteBuffer(string: "[1,2]")) { r in
                #expect(r.status == .badRequest)
                #expect(String(buffer: r.body).contains("\"error\""))
            }
            let big = "{\"pad\":\"" + String(repeating: "x", count: 70_000) + "\"}"
            try await client.execute(uri: "/v1/enrich", method: .post, body: ByteBuffer(string: big)) { r in
                #expect(r.status == .contentTooLarge)
            }
        }
    }

    @Test func tokensGuardV1AndMetricsButNotHealth() async throws {
        let h = try ServiceHarness(tokens: ["old-token", "new-token"])
        defer { h.stop() }
        try await h.app.test(.router) { client in
            try await client.execute(uri: "/v1/enrich", method: .post, body: h.payload(fcmPayload)) { r in
                #expect(r.status == .unauthorized)
            }
            try await client.execute(uri: "/v1/enrich", method: .post, headers: [.authorization: "Bearer wrong"], body: h.payload(fcmPayload)) { r in
                #expect(r.status == .unauthorized)
            }
            #expect(h.origin.statistics.requests == 0)  // refused before any fetch
            try await client.execute(uri: "/metrics", method: .get) { r in #expect(r.status == .unauthorized) }
            try await client.execute(uri: "/healthz", method: .get) { r in #expect(r.status == .ok) }
            for token in ["old-token", "new-token"] {
                try await client.execute(uri: "/v1/enrich", method: .post, headers: [.authorization: "Bearer \(token)"], body: h.payload(fcmPayload)) { r in
                    #expect(r.status == .ok)
                }
            }
            try await client.execute(uri: "/metrics", method: .get, headers: [.authorization: "Bearer new-token"]) { r in
                #expect(r.status == .ok)
                #expect(String(buffer: r.body).contains("attache_requests_total{outcome=\"enriched\",reason=\"none\"} 2"))
            }
        }
    }

    @Test func overloadedAnswersAtOnceWithTheOriginal() async throws {
        let h = try ServiceHarness(maxInFlight: 0)
        defer { h.stop() }
        try await h.app.test(.router) { client in
            try await client.execute(uri: "/v1/enrich", method: .post, body: h.payload(fcmPayload)) { r in
                #expect(r.status == .ok)
                #expect(r.headers[.testOutcome] == "fallback; reason=overloaded")
                #expect(r.body == h.payload(fcmPayload))
            }
        }
        #expect(h.origin.statistics.requests == 0)
    }

    @Test func mediaIsServedWithRangesAndStrongETags() async throws {
        let h = try ServiceHarness()
        defer { h.stop() }
        try await h.app.test(.router) { client in
            let body = try await client.execute(uri: "/v1/enrich", method: .post, body: h.payload(fcmPayload)) { String(buffer: $0.body) }
            let name = try #require(body.split(separator: "/").first { $0.hasSuffix(".jpg\"") || $0.contains(".jpg\",") }.map {
                String($0.prefix(68))
            })
            let hash = String(name.prefix(64))
            try await client.execute(uri: "/media/\(name)", method: .get) { r in
                #expect(r.status == .ok)
                #expect(r.headers[.contentType] == "image/jpeg")
                #expect(r.headers[.eTag] == "\"\(hash)\"")
                #expect(r.headers[.cacheControl] == "public, max-age=31536000, immutable")
            }
            try await client.execute(uri: "/media/\(name)", method: .head) { r in
                #expect(r.status == .ok)
                #expect(r.body.readableBytes == 0)
            }
            try await client.execute(uri: "/media/\(name)", method: .get, headers: [.range: "bytes=0-9"]) { r in
                #expect(r.status == .partialContent)
                #expect(r.body.readableBytes == 10)
                #expect(r.headers[.contentRange]?.hasPrefix("bytes 0-9/") == true)
            }
            try await client.execute(uri: "/media/\(name)", method: .get, headers: [.range: "bytes=99999999-"]) { r in
                #expect(r.status == .rangeNotSatisfiable)
            }
            try await client.execute(uri: "/media/\(name)", method: .get, headers: [.ifNoneMatch: "\"\(hash)\""]) { r in
                #expect(r.status == .notModified)
            }
            // One path per object: the same name with an empty segment or a trailing slash is not it.
            for bad in ["/media/..%2F..%2Fetc%2Fpasswd", "/media/\(hash).exe", "/media/\(String(repeating: "0", count: 64)).jpg", "/media/x.jpg",
                        "/media/\(name)/", "/media//\(name)", "/media/\(name)//", "//media/\(name)"] {
                try await client.execute(uri: bad, method: .get) { r in #expect(r.status == .notFound) }
            }
        }
    }

    /// A file of several read chunks comes out whole and in order, and a range from its middle is
    /// those bytes exactly. (Making and comparing 5 MB takes a second in a debug build: on the
    /// tests' own threads.)
    @Test(.onTestThreads) func largeMediaIsStreamedWholeAndInRanges() async throws {
        let h = try ServiceHarness()
        defer { h.stop() }
        let bytes = [UInt8](unsafeUninitializedCapacity: (5 << 20) + 123) { buffer, count in
            for i in buffer.indices { buffer[i] = UInt8(truncatingIfNeeded: i &* 2654435761 >> 13) }
            count = buffer.count
        }
        let name = "\(try SHA256Hasher.hex(bytes)).mp4"
        try writeFileAtomically("\(h.mediaDirectory)/\(name)", bytes)
        try await h.app.test(.router) { client in
            try await client.execute(uri: "/media/\(name)", method: .get) { r in
                #expect(r.status == .ok)
                #expect(r.headers[.contentLength] == String(bytes.count))
                #expect(Array(buffer: r.body) == bytes)
            }
            try await client.execute(uri: "/media/\(name)", method: .get, headers: [.range: "bytes=3000000-3200000"]) { r in
                #expect(r.status == .partialContent)
                #expect(Array(buffer: r.body) == Array(bytes[3_000_000...3_200_000]))
            }
            try await client.execute(uri: "/media/\(name)", method: .get, headers: [.range: "bytes=-5"]) { r in
                #expect(Array(buffer: r.body) == Array(bytes.suffix(5)))
            }
        }
    }

    @Test func healthAndReadiness() async throws {
        let h = try ServiceHarness()
        defer { h.origin.stop() }
        try await h.app.test(.router) { client in
            try await client.execute(uri: "/healthz", method: .get) { r in #expect(r.status == .ok) }
            try await client.execute(uri: "/readyz", method: .get) { r in #expect(r.status == .ok) }
            h.enrichment.shutdown()
            try await client.execute(uri: "/readyz", method: .get) { r in #expect(r.status == .serviceUnavailable) }
            try await client.execute(uri: "/healthz", method: .get) { r in #expect(r.status == .ok) }
        }
    }

    @Test func oneImageSentToManyIsFetchedOnce() async throws {
        let h = try ServiceHarness()
        defer { h.stop() }
        try await h.app.test(.router) { client in
            try await withThrowingTaskGroup(of: String?.self) { group in
                for _ in 0..<20 {
                    group.addTask {
                        try await client.execute(uri: "/v1/enrich", method: .post, body: h.payload(fcmPayload)) { $0.headers[.testOutcome] }
                    }
                }
                for try await outcome in group { #expect(outcome == "enriched") }
            }
        }
        #expect(h.origin.statistics.requestsByPath["/photo.jpg"] == 1)
    }
}

/// Deadline behaviour through the service (bounds: the deadline + 1 s); run after the rest (see the Makefile).
@Suite(.serialized) struct ServerDeadlineTests {
    @Test func liveOnLoopback() async throws {
        let h = try ServiceHarness()
        defer { h.stop() }
        try await h.app.test(.live) { client in
            try await client.execute(uri: "/v1/enrich", method: .post, body: h.payload(fcmPayload)) { r in
                #expect(r.status == .ok)
                #expect(r.headers[.testOutcome] == "enriched")
            }
            try await client.execute(uri: "/healthz", method: .get) { r in #expect(r.status == .ok) }
        }
    }

    @Test func twoHundredRequestsToAHangingOriginAreAllAnsweredInTime() async throws {
        let h = try ServiceHarness(maxInFlight: 1000)
        defer { h.stop() }
        try await h.app.test(.router) { client in
            let elapsed = try await withThrowingTaskGroup(of: (Duration, Bool).self) { group in
                for i in 0..<200 {
                    group.addTask {
                        let body = h.payload(#"{"aps":{"alert":"x","mutable-content":1},"image-url":"ORIGIN/photo.jpg?hang=1&n=\#(i)"}"#)
                        let start = ContinuousClock.now
                        return try await client.execute(uri: "/v1/enrich", method: .post, headers: [.testDeadline: "500"], body: body) { r in
                            (start.duration(to: .now), r.status == .ok && r.body == body && r.headers[.testOutcome] == "fallback; reason=timeout")
                        }
                    }
                }
                return try await group.reduce(into: [(Duration, Bool)]()) { $0.append($1) }
            }
            #expect(elapsed.count == 200)
            #expect(elapsed.allSatisfy { $0.1 })
            let slowest = elapsed.map(\.0).max() ?? .zero
            // The origin never answers: every answer by the deadline + 1 s proves none waited for it.
            #expect(slowest < .milliseconds(1500), "slowest answer after \(slowest)")
        }
    }
}
