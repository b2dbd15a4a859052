import Attache
import AttacheEnrichment
import AttacheFetch
import AttacheOperations
import AttacheOrigin
@testable import AttacheRelay
import AttacheTenants
import AttacheTesting
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdHTTP2
import HummingbirdTesting
import Logging
import NIOCore
import Synchronization
import Testing
import _CryptoExtras

/// The relay between a client and the fake APNs and FCM upstreams, on loopback.
struct RelayHarness {
    static let quiet = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

    struct Upstreams {
        var apns: FakeProvider
        var fcm: FakeProvider
    }

    /// Runs `body` with a client to a relay forwarding to the fakes (or, with `closed`, to a port
    /// where nothing listens); `configure` sets what else the relay runs with.
    static func with(apns: FakeProvider.APNs = .init(), fcm: FakeProvider.FCM = .init(), tls: FakeProvider.TLS? = nil,
                     upstreamStreams: Int = 100, closed: Bool = false, tenants: [Tenant]? = nil, configure: (inout RelayConfiguration) throws -> Void = { _ in },
                     credentials: (RelayConfiguration) throws -> ProviderCredentials = { _ in ProviderCredentials() },
                     _ body: @Sendable (RelayClient, Upstreams, Origin) async throws -> Void) async throws {
        let origin = try Origin(root: Fixtures.mediaDirectory)
        defer { origin.stop() }
        let upstreams = Upstreams(apns: try FakeProvider(.apns(apns), tls: tls, streams: upstreamStreams),
                                  fcm: try FakeProvider(.fcm(fcm), tls: tls, streams: upstreamStreams))
        defer {
            upstreams.apns.stop()
            upstreams.fcm.stop()
        }
        var options = Enrichment.Configuration()
        options.storage.directory = try makeTempDirectory()
        options.fetch.policy.allowed = [CIDR("127.0.0.1/32")!]
        options.storage.publicBaseURL = "https://cdn.example.com/m"
        options.runtime.deadlinePolicy.default = Fixtures.generousDeadline
        let enrichment = try Enrichment(configuration: options, logger: quiet)
        defer { enrichment.shutdown() }
        let nowhere = "http://127.0.0.1:\(try freePorts(1)[0])"
        var configuration = RelayConfiguration(port: 0, apnsUpstream: closed ? nowhere : upstreams.apns.url,
                                               fcmUpstream: closed ? nowhere : upstreams.fcm.url,
                                               upstreamTimeout: .seconds(5))
        try configure(&configuration)
        let relayTenants = try tenants.map { try Tenants($0, makeScope: Tenants.scope(in: enrichment)) }
        let forwarder = try Forwarder(configuration: configuration)
        defer { forwarder.shutdown() }
        let relay = try buildRelayApplication(configuration: configuration, enrichment: enrichment, forwarder: forwarder,
                                              tenants: relayTenants, credentials: try credentials(configuration), logger: quiet)
        try await relay.test(.live) { relayClient in
            let client = RelayClient(port: try #require(relayClient.port))
            try await body(client, upstreams, origin)
        }
    }
}

/// A certificate authority, a server certificate for 127.0.0.1 and a client certificate, made
/// for one test by `Tests/cli/test-ca.sh`.
struct TestCertificates {
    let directory: String
    var ca: String { directory + "/ca.pem" }
    var server: FakeProvider.TLS { .init(certificatePath: directory + "/server.pem", keyPath: directory + "/server.key") }
    var client: RelayConfiguration.Identity { .init(certificatePath: directory + "/client.pem", keyPath: directory + "/client.key") }

    init() throws {
        directory = try makeTempDirectory()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [Fixtures.repositoryRoot + "/Tests/cli/test-ca.sh", directory]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw CocoaError(.fileWriteUnknown) }
    }
}

/// curl speaking HTTP/2 with prior knowledge, as a provider's client would to a sidecar.
struct RelayClient {
    let port: Int

    struct Answer {
        var status: Int
        var fields: [String: String]
        var body: String
    }

    /// `http1`: HTTP/1.1, as firebase-admin sends, instead of HTTP/2 with prior knowledge. No
    /// limit but the request's: the relay may rightly take as long as enrichment and the upstream
    /// are allowed to (a loaded machine makes a first enrichment slow).
    func post(_ path: String, _ body: String, fields: [String] = [], http1: Bool = false) async throws -> Answer {
        let client = CurlClient(version: http1 ? .http1 : .http2PriorKnowledge)
        let answer = try await client.post("http://127.0.0.1:\(port)\(path)", body: Array(body.utf8), fields: fields)
        return Answer(status: answer.status, fields: answer.fields, body: answer.text)
    }
}

@Suite(.serialized) struct RelayTests {
    static let apnsFields = ["authorization: bearer eyJhbGciOiJFUzI1NiJ9.e30.c2ln", "apns-topic: com.example.app",
                             "apns-push-type: alert", "apns-priority: 10", "apns-id: 7C5F0D7E-1111-2222-3333-444455556666"]

    /// No `mutable-content`: the body reaches Apple byte for byte, with the client's headers, and
    /// the client gets Apple's answer with the outcome beside it.
    @Test func aRequestWithoutMutableContentIsForwardedAsItCame() async throws {
        try await RelayHarness.with { client, upstreams, _ in
            let body = #"{"aps":{"alert":"plain","badge":3},"custom":{"n":1.50}}"#
            let answer = try await client.post("/3/device/abc123", body, fields: Self.apnsFields + ["attache-deadline-ms: 2500"])
            #expect(answer.status == 200)
            #expect(answer.fields["apns-id"] == "7C5F0D7E-1111-2222-3333-444455556666")
            #expect(answer.fields["apns-unique-id"]?.count == 36)
            #expect(answer.fields["attache-outcome"] == "passthrough; reason=not-mutable")
            #expect(answer.fields["attache-deadline-ms"] == "2500")
            let got = try #require(upstreams.apns.received.first)
            #expect(got.path == "/3/device/abc123")
            #expect(got.body == Array(body.utf8))
            for (name, value) in [("authorization", "bearer eyJhbGciOiJFUzI1NiJ9.e30.c2ln"), ("apns-topic", "com.example.app"),
                                  ("apns-push-type", "alert"), ("apns-priority", "10")] {
                #expect(got.fields[name] == value, "\(name)")
            }
            // The relay's own field stays with the relay, and it adds none of its own.
            #expect(got.fields["attache-deadline-ms"] == nil)
            #expect(got.fields["accept"] == nil && got.fields["user-agent"] == nil && got.fields["content-type"] == nil)
        }
    }

    /// With `mutable-content`, Apple receives the enriched payload; the answer is Apple's.
    @Test func aMutableRequestReachesAppleEnriched() async throws {
        try await RelayHarness.with { client, upstreams, origin in
            let body = #"{"aps":{"alert":"sale","mutable-content":1},"image-url":"http://127.0.0.1:\#(origin.port)/photo.jpg"}"#
            let answer = try await client.post("/3/device/abc123", body, fields: Self.apnsFields)
            #expect(answer.status == 200)
            #expect(answer.fields["attache-outcome"] == "enriched")
            let got = try #require(upstreams.apns.received.first)
            let payload = String(decoding: got.body, as: UTF8.self)
            #expect(payload.hasPrefix(#"{"aps":{"alert":"sale","mutable-content":1},"image-url":"https://cdn.example.com/m/"#))
            #expect(payload.contains(#""attachments":[{"id":"#))
            #expect(!payload.contains("attache"))  // no outcome or header of the relay's in what Apple gets
        }
    }

    /// Apple's refusals are the client's answers, as Apple gave them: a bad token, an unregistered
    /// device (with its timestamp), a missing provider token, an injected 429.
    @Test func upstreamRefusalsArePassedBack() async throws {
        try await RelayHarness.with(apns: .init(unregistered: ["dead"])) { client, upstreams, _ in
            let bad = try await client.post("/3/device/not-hex", #"{"aps":{"alert":"x"}}"#, fields: Self.apnsFields)
            #expect((bad.status, bad.body) == (400, #"{"reason":"BadDeviceToken"}"#))
            let gone = try await client.post("/3/device/dead", #"{"aps":{"alert":"x"}}"#, fields: Self.apnsFields)
            #expect(gone.status == 410)
            #expect(gone.body.hasPrefix(#"{"reason":"Unregistered","timestamp":"#))
            upstreams.apns.inject(.answer(status: 429, reason: "TooManyRequests"))
            let busy = try await client.post("/3/device/abc", #"{"aps":{"alert":"x"}}"#, fields: Self.apnsFields)
            #expect((busy.status, busy.body) == (429, #"{"reason":"TooManyRequests"}"#))
        }
        let key = P256.Signing.PrivateKey()
        try await RelayHarness.with(apns: .init(providerKey: key.publicKey, keyID: "K", teamID: "T")) { client, _, _ in
            let unsigned = try await client.post("/3/device/abc", #"{"aps":{"alert":"x"}}"#)
            #expect((unsigned.status, unsigned.body) == (403, #"{"reason":"MissingProviderToken"}"#))
            let old = try ProviderToken(keyPEM: key.pemRepresentation, keyID: "K", teamID: "T").token(issuedAt: Int64(Date().timeIntervalSince1970) - 3700)
            let expired = try await client.post("/3/device/abc", #"{"aps":{"alert":"x"}}"#,
                                                 fields: ["authorization: bearer \(old)", "apns-topic: com.example.app"])
            #expect((expired.status, expired.body) == (403, #"{"reason":"ExpiredProviderToken"}"#))
        }
    }

    /// An answer that is not the upstream's 200 tells enrichment and delivery apart: the payload
    /// was enriched, but nothing reached a device, whether the upstream refused it or none answered.
    @Test func anAnswerThatDeliveredNothingSaysSo() async throws {
        try await RelayHarness.with { client, upstreams, origin in
            let body = #"{"aps":{"alert":"sale","mutable-content":1},"image-url":"http://127.0.0.1:\#(origin.port)/photo.jpg"}"#
            upstreams.apns.inject(.answer(status: 400, reason: "BadDeviceToken"))
            let refused = try await client.post("/3/device/abc123", body, fields: Self.apnsFields)
            #expect((refused.status, refused.body) == (400, #"{"reason":"BadDeviceToken"}"#))
            #expect(refused.fields["attache-outcome"] == "enriched; delivered=false")
            upstreams.apns.inject(.answer(status: 429, reason: "TooManyRequests"))
            let busy = try await client.post("/3/device/abc123", #"{"aps":{"alert":"x"}}"#, fields: Self.apnsFields)
            #expect(busy.fields["attache-outcome"] == "passthrough; reason=not-mutable; delivered=false")
            let sent = try await client.post("/3/device/abc123", body, fields: Self.apnsFields)
            #expect((sent.status, sent.fields["attache-outcome"]) == (200, "enriched"))
        }
        try await RelayHarness.with(closed: true) { client, _, origin in
            let body = #"{"aps":{"alert":"sale","mutable-content":1},"image-url":"http://127.0.0.1:\#(origin.port)/photo.jpg"}"#
            let down = try await client.post("/3/device/abc123", body, fields: Self.apnsFields)
            #expect((down.status, down.fields["attache-outcome"]) == (503, "enriched; delivered=false"))
            let fcm = try await client.post("/v1/projects/p1/messages:send", #"{"message":{"topic":"t"}}"#)
            #expect((fcm.status, fcm.fields["attache-outcome"]) == (503, "passthrough; reason=not-mutable; delivered=false"))
        }
    }

    /// An upstream's answer whose body is not its `content-length`, or whose `content-length` is
    /// not one length, is no answer (RFC 9113 § 8.1.1): the client is told 503, not handed a
    /// misframed answer, and the connection carries the next request as before.
    @Test func anAnswerThatIsNotItsContentLengthIsNoAnswer() async throws {
        try await RelayHarness.with { client, upstreams, _ in
            for declared in ["5", "x1", "-1"] {
                upstreams.apns.inject(.contentLength(declared))
                let answer = try await client.post("/3/device/abc123", #"{"aps":{"alert":"x"}}"#, fields: Self.apnsFields)
                #expect((answer.status, answer.fields["attache-outcome"]) == (503, "passthrough; reason=not-mutable; delivered=false"),
                        "content-length \(declared) on an empty body")
            }
            upstreams.apns.inject(.contentLength("0"))
            let empty = try await client.post("/3/device/abc123", #"{"aps":{"alert":"x"}}"#, fields: Self.apnsFields)
            #expect(empty.status == 200, "content-length 0 on an empty body is the answer")
            let reason = #"{"reason":"BadDeviceToken"}"#
            upstreams.apns.inject(.contentLength(String(reason.utf8.count - 1)), .contentLength(String(reason.utf8.count)))
            let short = try await client.post("/3/device/not-hex", #"{"aps":{"alert":"x"}}"#, fields: Self.apnsFields)
            #expect(short.status == 503, "a body one byte longer than its content-length")
            let refused = try await client.post("/3/device/not-hex", #"{"aps":{"alert":"x"}}"#, fields: Self.apnsFields)
            #expect((refused.status, refused.body) == (400, reason), "a body its content-length")
            let next = try await client.post("/3/device/abc123", #"{"aps":{"alert":"x"}}"#, fields: Self.apnsFields)
            #expect(next.status == 200)
        }
    }

    /// The enrichment's deadline counts from the request's head: a body held back past the whole
    /// 2 s budget goes to Apple at once, as it came (reason timeout), not 2 s later.
    @Test func theDeadlineCountsFromTheRequestsHead() async throws {
        try await RelayHarness.with { client, upstreams, origin in
            let body = #"{"aps":{"alert":"sale","mutable-content":1},"image-url":"http://127.0.0.1:\#(origin.port)/photo.jpg?hang=1"}"#
            let c = try RawConnection(port: client.port)
            let (answer, afterBody) = try await c.postHoldingTheBody("/3/device/abc123", fields: Self.apnsFields + ["Attache-Deadline-Ms: 2000"],
                                                                    body: body, after: .milliseconds(2200))
            #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer.prefix(80))")
            #expect(answer.lowercased().contains("attache-outcome: fallback; reason=timeout"), "\(answer)")
            #expect(afterBody < .seconds(1), "answered \(afterBody) after the body")
            #expect(upstreams.apns.received.map { String(decoding: $0.body, as: UTF8.self) } == [body])
            #expect(origin.statistics.requests == 0)
        }
    }

    /// An upstream that cannot be reached, is too slow, or drops the connection is never "sent":
    /// 503 ServiceUnavailable in each provider's shape, so the client retries.
    @Test func anUnreachableUpstreamIs503InTheProvidersShape() async throws {
        try await RelayHarness.with(closed: true) { client, _, _ in
            let apns = try await client.post("/3/device/abc", #"{"aps":{"alert":"x"}}"#, fields: Self.apnsFields)
            #expect((apns.status, apns.body) == (503, #"{"reason":"ServiceUnavailable"}"#))
            // Every answer carries the request's apns-id, as Apple's do (clients read it from each).
            #expect(apns.fields["apns-id"] == "7C5F0D7E-1111-2222-3333-444455556666")
            let unnamed = try await client.post("/3/device/abc", #"{"aps":{"alert":"x"}}"#, fields: ["apns-topic: com.example.app"])
            #expect(unnamed.status == 503)
            #expect(unnamed.fields["apns-id"]?.count == 36)
            #expect(unnamed.fields["apns-id"].map { $0.split(separator: "-").map(\.count) } == [8, 4, 4, 4, 12])
            let fcm = try await client.post("/v1/projects/p1/messages:send", #"{"message":{"topic":"t"}}"#)
            #expect(fcm.status == 503)
            #expect(fcm.body == #"{"error":{"code":503,"message":"ServiceUnavailable","status":"UNAVAILABLE"}}"#)
        }
        try await RelayHarness.with(configure: { $0.upstreamTimeout = .milliseconds(300) }) { client, upstreams, _ in
            upstreams.apns.delay(.seconds(2))
            let slow = try await client.post("/3/device/abc", #"{"aps":{"alert":"x"}}"#, fields: Self.apnsFields)
            #expect((slow.status, slow.body) == (503, #"{"reason":"ServiceUnavailable"}"#))
            upstreams.apns.delay(.zero)
            upstreams.apns.inject(.drop)
            let dropped = try await client.post("/3/device/abc", #"{"aps":{"alert":"x"}}"#, fields: Self.apnsFields)
            #expect(dropped.status == 503)
            // The next request gets a new connection.
            let after = try await client.post("/3/device/abc", #"{"aps":{"alert":"x"}}"#, fields: Self.apnsFields)
            #expect(after.status == 200)
        }
    }

    /// A GOAWAY that refuses a request unprocessed: the relay sends it again on a new connection;
    /// Apple receives it once and the client is told "sent" once.
    @Test func aRequestRefusedByGoAwayIsSentOnceOnANewConnection() async throws {
        try await RelayHarness.with { client, upstreams, _ in
            let first = try await client.post("/3/device/abc", #"{"aps":{"alert":"1"}}"#, fields: Self.apnsFields)
            #expect(first.status == 200)
            upstreams.apns.inject(.goAway)
            let second = try await client.post("/3/device/abc", #"{"aps":{"alert":"2"}}"#, fields: Self.apnsFields)
            #expect(second.status == 200)
            for i in 3...6 {
                #expect(try await client.post("/3/device/abc", #"{"aps":{"alert":"\#(i)"}}"#, fields: Self.apnsFields).status == 200)
            }
            let received = upstreams.apns.received
            #expect(received.map { String(decoding: $0.body, as: UTF8.self) } == (1...6).map { #"{"aps":{"alert":"\#($0)"}}"# })
            // No request goes to a connection after its GOAWAY.
            let away = upstreams.apns.wentAway
            #expect(away.count == 1)
            #expect(received.dropFirst().allSatisfy { !away.contains($0.connection) })
        }
    }

    /// An upstream that takes one stream per connection at a time: the relay opens more
    /// connections as its requests fill those it has (it kept a fixed two, one per core, and the
    /// rest waited in NIO's buffer), and every request still goes once.
    @Test func moreUpstreamConnectionsOpenAsTheirStreamsFill() async throws {
        try await RelayHarness.with(upstreamStreams: 1) { client, upstreams, _ in
            upstreams.apns.delay(.milliseconds(100))
            for wave in 0..<4 {
                let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                    for n in 0..<6 {
                        group.addTask { try await client.post("/3/device/abc", #"{"aps":{"alert":"\#(wave * 6 + n)"}}"#, fields: Self.apnsFields).status }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                #expect(statuses == Array(repeating: 200, count: 6))
            }
            #expect(upstreams.apns.received.count == 24)
            #expect(Set(upstreams.apns.received.map { String(decoding: $0.body, as: UTF8.self) }).count == 24)
            #expect(upstreams.apns.connections > 2)
            #expect(upstreams.apns.connections <= System.coreCount * Forwarder.connectionsPerLoop)
        }
    }

    /// A GOAWAY alone, with no RST_STREAM, whose last stream id is below the request's (0 on a
    /// connection's first stream): the upstream did not process it, so it goes again on a new
    /// connection, once, and the client is told "sent".
    @Test func aRequestAboveAGoAwaysLastStreamIsSentOnceOnANewConnection() async throws {
        try await RelayHarness.with { client, upstreams, _ in
            upstreams.apns.inject(.goAwayAlone)
            let first = try await client.post("/3/device/abc", #"{"aps":{"alert":"1"}}"#, fields: Self.apnsFields)
            #expect(first.status == 200)
            let received = upstreams.apns.received
            #expect(received.map { String(decoding: $0.body, as: UTF8.self) } == [#"{"aps":{"alert":"1"}}"#])
            #expect(received.allSatisfy { !upstreams.apns.wentAway.contains($0.connection) })
        }
    }

    /// FCM v1: Google's own image example is enriched (its alert is FCM's to build) and forwarded
    /// with `webpush` as it came; the client gets Google's `name`.
    @Test func anFCMRequestIsEnrichedAndForwarded() async throws {
        try await RelayHarness.with(fcm: .init(unregistered: ["gone"])) { client, upstreams, origin in
            let sample = String(decoding: Fixtures.bytes("fcm-v1-notification-alert.json", in: Fixtures.payloadDirectory), as: UTF8.self)
                .replacingAll("127.0.0.1:8765", with: "127.0.0.1:\(origin.port)")
            let answer = try await client.post("/v1/projects/p1/messages:send", sample,
                                               fields: ["authorization: Bearer ya29.token", "content-type: application/json"])
            #expect(answer.status == 200)
            #expect(answer.body.hasPrefix(#"{"name":"projects/p1/messages/0:"#))
            #expect(answer.fields["attache-outcome"] == "enriched")
            let got = String(decoding: try #require(upstreams.fcm.received.first).body, as: UTF8.self)
            #expect(got.contains(#""fcm_options":{"image":"https://cdn.example.com/m/"#))
            #expect(got.contains(#""webpush":{"headers":{"image":"http://127.0.0.1:\#(origin.port)/photo.jpg"}}"#))
            // The same over HTTP/1.1 on the same clear-text port, as firebase-admin sends.
            let overHTTP1 = try await client.post("/v1/projects/p1/messages:send", sample, fields: ["authorization: Bearer ya29.token"], http1: true)
            #expect(overHTTP1.status == 200)
            #expect(overHTTP1.fields["attache-outcome"] == "enriched")
            #expect(upstreams.fcm.received.count == 2)
            // Without mutable-content the Android image is still copied (Android has no extension
            // to gate); the APNs part goes as it came.
            let quiet = sample.replacingAll(#""mutable-content":1"#, with: #""badge":1"#)
            let android = try await client.post("/v1/projects/p1/messages:send", quiet, fields: ["authorization: Bearer ya29.token"])
            #expect(android.status == 200)
            #expect(android.fields["attache-outcome"] == "enriched")
            let sent = String(decoding: try #require(upstreams.fcm.received.last).body, as: UTF8.self)
            #expect(sent.contains(#""android":{"notification":{"image":"https://cdn.example.com/m/"#))
            #expect(sent.contains(#""apns":{"payload":{"aps":{"badge":1}},"fcm_options":{"image":"http://127.0.0.1:\#(origin.port)/photo.jpg"}}"#))
            let gone = try await client.post("/v1/projects/p1/messages:send", #"{"message":{"token":"gone"}}"#)
            #expect(gone.status == 404)
            #expect(gone.body.contains(#""errorCode":"UNREGISTERED""#))
        }
    }

    /// With tenants, a request is the tenant's whose apps name its APNs topic or FCM project: enriched
    /// in its scope; a request of no tenant, or of one past its limits, is still sent — unenriched,
    /// with the reason — and the client gets what Apple or Google answered.
    @Test func requestsAreTheirAppsTenantsAndAreAlwaysSent() async throws {
        let tenants = [
            Tenant(name: "acme", tokenHashes: [], hosts: try HostAllowlist(["127.0.0.1"])),
            Tenant(name: "beta", tokenHashes: [], hosts: try HostAllowlist(["localhost"]), rate: .init(perSecond: 0.01, burst: 1)),
        ]
        var withApps = tenants
        withApps[0].apps = ["com.example.app"]
        withApps[1].apps = ["p1"]
        try await RelayHarness.with(tenants: withApps) { client, upstreams, origin in
            let body = #"{"aps":{"alert":"sale","mutable-content":1},"image-url":"http://127.0.0.1:\#(origin.port)/photo.jpg"}"#
            let acme = try await client.post("/3/device/abc123", body, fields: Self.apnsFields)
            #expect(acme.status == 200)
            #expect(acme.fields["attache-outcome"] == "enriched")
            let enriched = String(decoding: try #require(upstreams.apns.received.last).body, as: UTF8.self)
            #expect(enriched.contains("https://cdn.example.com/m/acme/"))

            let other = try await client.post("/3/device/abc123", body, fields: Self.apnsFields.map {
                $0.hasPrefix("apns-topic") ? "apns-topic: com.other.app" : $0
            })
            #expect(other.status == 200)
            #expect(other.fields["attache-outcome"] == "fallback; reason=unknown-tenant")
            #expect(try #require(upstreams.apns.received.last).body == Array(body.utf8))

            let sample = String(decoding: Fixtures.bytes("fcm-v1-notification-alert.json", in: Fixtures.payloadDirectory), as: UTF8.self)
                .replacingAll("127.0.0.1:8765", with: "127.0.0.1:\(origin.port)")
            let fields = ["authorization: Bearer ya29.token", "content-type: application/json"]
            let first = try await client.post("/v1/projects/p1/messages:send", sample, fields: fields)
            #expect(first.status == 200)
            #expect(first.fields["attache-outcome"] == "fallback; reason=host-not-allowed")
            let second = try await client.post("/v1/projects/p1/messages:send", sample, fields: fields)
            #expect(second.status == 200)
            #expect(second.fields["attache-outcome"] == "fallback; reason=tenant-limited")
            #expect(try #require(upstreams.fcm.received.last).body == Array(sample.utf8))
            #expect(upstreams.fcm.received.count == 2)
        }
    }

    /// Apple's answers for what is not a send: too large, a path that is not a send API.
    @Test func badRequestsGetApplesAnswers() async throws {
        try await RelayHarness.with(configure: { $0.maxBodyBytes = 5120 }) { client, upstreams, _ in
            let big = #"{"aps":{"alert":""# + String(repeating: "x", count: 6000) + #""}}"#
            let answer = try await client.post("/3/device/abc", big, fields: Self.apnsFields)
            #expect((answer.status, answer.body) == (413, #"{"reason":"PayloadTooLarge"}"#))
            #expect(answer.fields["apns-id"] == "7C5F0D7E-1111-2222-3333-444455556666")
            let elsewhere = try await client.post("/3/devices/abc", #"{"aps":{}}"#, fields: Self.apnsFields)
            #expect((elsewhere.status, elsewhere.body) == (404, #"{"reason":"BadPath"}"#))
            #expect(elsewhere.fields["apns-id"] == "7C5F0D7E-1111-2222-3333-444455556666")
            #expect(upstreams.apns.received.isEmpty)
        }
    }

    /// A relay's own listener named as its upstream is refused at start (`Tests/cli/relay.sh`
    /// shows a loop through another relay cut at its first turn by the `via` field).
    @Test func theRelaysOwnListenerIsNoUpstream() {
        let relay = RelayConfiguration(host: "0.0.0.0", port: 8443)
        for url in ["http://127.0.0.1:8443", "https://localhost:8443/x", "http://[::1]:8443", "http://0.0.0.0:8443"] {
            #expect(relay.isOwnListener(url), "\(url)")
        }
        for url in ["http://127.0.0.1:8444", "https://api.push.apple.com", "https://relay.internal:8443"] {
            #expect(!relay.isOwnListener(url), "\(url)")
        }
        #expect(!RelayConfiguration(host: "127.0.0.1", port: 8443).isOwnListener("http://[::1]:8443"))
    }

    /// A relay that holds the team's key sends its own provider token (one, reused) in place of
    /// whatever the client sent; the fake checks it as Apple does (signature, key id, team, age,
    /// and no replacement within 20 minutes).
    @Test func aRelayHoldingTheKeySignsItsOwnProviderTokens() async throws {
        let key = P256.Signing.PrivateKey()
        let token = try ProviderToken(keyPEM: key.pemRepresentation, keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
        try await RelayHarness.with(apns: .init(providerKey: key.publicKey, keyID: "ABC123DEFG", teamID: "DEF123GHIJ"),
                                    credentials: { _ in ProviderCredentials(apns: token) }) { client, upstreams, _ in
            for _ in 0..<3 {
                let answer = try await client.post("/3/device/abc", #"{"aps":{"alert":"x"}}"#,
                                                   fields: ["authorization: bearer client-token", "apns-topic: com.example.app"])
                #expect(answer.status == 200)
            }
            let sent = upstreams.apns.received.map { $0.fields["authorization"] ?? "" }
            #expect(sent.count == 3 && Set(sent).count == 1)
            #expect(!sent[0].contains("client-token"))
        }
    }

    /// Certificate-based authentication: over TLS, Apple's double asks for a client certificate;
    /// the relay presents the provider's and is let in, a relay without one is not.
    @Test func aRelayPresentsTheProvidersClientCertificate() async throws {
        let certificates = try TestCertificates()
        var tls = certificates.server
        tls.clientCA = certificates.ca
        try await RelayHarness.with(tls: tls, configure: {
            $0.upstreamCA = certificates.ca
            $0.apnsCertificate = certificates.client
        }) { client, upstreams, _ in
            let answer = try await client.post("/3/device/abc", #"{"aps":{"alert":"x"}}"#, fields: ["apns-topic: com.example.app"])
            #expect(answer.status == 200)
            #expect(upstreams.apns.received.count == 1)
        }
        try await RelayHarness.with(tls: tls, configure: { $0.upstreamCA = certificates.ca }) { client, upstreams, _ in
            let answer = try await client.post("/3/device/abc", #"{"aps":{"alert":"x"}}"#, fields: ["apns-topic: com.example.app"])
            #expect((answer.status, answer.body) == (503, #"{"reason":"ServiceUnavailable"}"#))
            #expect(upstreams.apns.received.isEmpty)
        }
    }

    /// A relay that holds a service account buys an OAuth token from the account's token endpoint
    /// (over TLS, trusted through the upstream CA), reuses it, and buys another before it expires;
    /// FCM's double accepts only tokens its endpoint issued.
    @Test func aRelayHoldingAServiceAccountBuysAndRenewsFCMTokens() async throws {
        let certificates = try TestCertificates()
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        for (lifetime, tokens) in [(3599, 1), (300, 3)] {
            try await RelayHarness.with(fcm: .init(serviceAccount: ("relay@p1.iam.gserviceaccount.com", key.publicKey), tokenLifetime: lifetime),
                                        tls: certificates.server, configure: { $0.upstreamCA = certificates.ca }, credentials: { configuration in
                let account = #"{"type":"service_account","client_email":"relay@p1.iam.gserviceaccount.com","private_key":"\#(key.pemRepresentation.replacingAll("\n", with: "\\n"))","token_uri":"\#(configuration.fcmUpstream)/token"}"#
                return ProviderCredentials(fcm: try ServiceAccountToken(json: Array(account.utf8), caFile: certificates.ca))
            }) { client, upstreams, _ in
                for i in 0..<3 {
                    let answer = try await client.post("/v1/projects/p1/messages:send", #"{"message":{"topic":"t\#(i)"}}"#,
                                                       fields: ["authorization: Bearer from-the-client"])
                    #expect(answer.status == 200, "\(answer.body)")
                }
                let sent = upstreams.fcm.received.map { $0.fields["authorization"] ?? "" }
                #expect(sent.count == 3)
                #expect(Set(sent).count == tokens, "a token that lasts \(lifetime) s")
                #expect(sent.allSatisfy { $0.hasPrefix("Bearer ya29.fake-") })
            }
        }
        // A key the endpoint does not know buys nothing: 503, and nothing reaches FCM.
        let stranger = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        try await RelayHarness.with(fcm: .init(serviceAccount: ("relay@p1.iam.gserviceaccount.com", key.publicKey)),
                                    tls: certificates.server, configure: { $0.upstreamCA = certificates.ca }, credentials: { configuration in
            let account = #"{"client_email":"relay@p1.iam.gserviceaccount.com","private_key":"\#(stranger.pemRepresentation.replacingAll("\n", with: "\\n"))","token_uri":"\#(configuration.fcmUpstream)/token"}"#
            return ProviderCredentials(fcm: try ServiceAccountToken(json: Array(account.utf8), caFile: certificates.ca))
        }) { client, upstreams, _ in
            let answer = try await client.post("/v1/projects/p1/messages:send", #"{"message":{"topic":"t"}}"#)
            #expect(answer.status == 503)
            #expect(!answer.body.contains("ya29") && !answer.body.contains("PRIVATE"))
            #expect(upstreams.fcm.received.isEmpty)
        }
    }
}
