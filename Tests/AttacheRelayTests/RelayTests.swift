import Attache
import AttacheFetch
import Crypto
import AttacheOperations
import AttacheOrigin
import AttacheRelay
import AttacheTesting
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdHTTP2
import HummingbirdTesting
import Logging
import NIOCore
import Synchronization
import Testing

/// An upstream that checks what Apple checks of a request (a path with a token, a provider token,
/// the payload's size) and answers in Apple's shapes; FCM's send path answers Google's `name`.
/// Plain HTTP/2 with prior knowledge on loopback, as the relay reaches its double.
final class FakeUpstream: Sendable {
    struct Received: Sendable {
        var path: String
        var fields: [String: String]
        var body: [UInt8]
    }

    let received = Mutex<[Received]>([])

    var application: some ApplicationProtocol {
        let router = Router()
        router.post("/3/device/:token") { request, context in
            let received = try await self.record(request)
            if context.parameters.get("token") == "bad" { return Self.apns(.badRequest, reason: "BadDeviceToken") }
            guard received.fields["authorization"]?.hasPrefix("bearer ") == true else {
                return Self.apns(.forbidden, reason: "MissingProviderToken")
            }
            guard received.body.count <= 4096 else { return Self.apns(.contentTooLarge, reason: "PayloadTooLarge") }
            var headers = HTTPFields()
            headers[HTTPField.Name("apns-id")!] = received.fields["apns-id"] ?? "1B2C3D4E-0000-0000-0000-000000000001"
            headers[HTTPField.Name("apns-unique-id")!] = "unique-1"
            return Response(status: .ok, headers: headers)
        }
        router.post("/v1/projects/:project/messages:send") { request, context in
            _ = try await self.record(request)
            let name = #"{"name":"projects/\#(context.parameters.get("project") ?? "")/messages/0:1"}"#
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: name)))
        }
        return Application(router: router, server: .plaintextHTTP2(), configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                           logger: Logger(label: "upstream", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    private func record(_ request: Request) async throws -> Received {
        let body = Array(buffer: try await request.body.collect(upTo: 1 << 20))
        var fields: [String: String] = [:]
        for field in request.headers { fields[field.name.canonicalName] = field.value }
        let received = Received(path: request.uri.path, fields: fields, body: body)
        self.received.withLock { $0.append(received) }
        return received
    }

    static func apns(_ status: HTTPResponse.Status, reason: String) -> Response {
        Response(status: status, headers: [.contentType: "application/json"],
                 body: .init(byteBuffer: ByteBuffer(string: #"{"reason":"\#(reason)"}"#)))
    }
}

/// The relay between a client and the fake upstream, on loopback.
struct RelayHarness {
    static let quiet = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

    /// Runs `body` with a client to a relay forwarding to `upstream` (nil: the fake) and the fake.
    static func with(upstream override: String? = nil, maxBodyBytes: Int = 64 * 1024, apnsToken: ProviderToken? = nil,
                     _ body: @Sendable (RelayClient, FakeUpstream, Origin) async throws -> Void) async throws {
        let origin = try Origin(configuration: .init(root: Fixtures.mediaDirectory))
        defer { origin.stop() }
        let fake = FakeUpstream()
        try await fake.application.test(.live) { upstreamClient in
            let upstreamPort = try #require(upstreamClient.port)
            let upstream = override ?? "http://127.0.0.1:\(upstreamPort)"
            var options = Enrichment.Configuration()
            options.mediaDirectory = try makeTempDirectory()
            options.allowedAddresses = [CIDR("127.0.0.1/32")!]
            options.publicBaseURL = "https://cdn.example.com/m"
            let enrichment = try Enrichment(configuration: options, logger: quiet)
            defer { enrichment.shutdown() }
            var configuration = RelayConfiguration(port: 0, apnsUpstream: upstream, fcmUpstream: upstream,
                                                   deadline: DeadlinePolicy(default: Fixtures.generousDeadline),
                                                   upstreamTimeout: .seconds(5), maxBodyBytes: maxBodyBytes)
            configuration.apnsToken = apnsToken
            let forwarder = try Forwarder(configuration: configuration)
            defer { forwarder.shutdown() }
            let relay = try buildRelayApplication(configuration: configuration, enrichment: enrichment, forwarder: forwarder, logger: quiet)
            try await relay.test(.live) { relayClient in
                let client = try RelayClient(port: try #require(relayClient.port))
                defer { client.engine.shutdown() }
                try await body(client, fake, origin)
            }
        }
    }
}

/// libcurl speaking HTTP/2 with prior knowledge, as a provider's client would to a sidecar.
struct RelayClient {
    let port: Int
    let engine: FetchEngine

    init(port: Int) throws {
        self.port = port
        engine = try FetchEngine(configuration: .init(policy: AddressPolicy(allowed: [CIDR("127.0.0.1/32")!])))
    }

    struct Answer {
        var status: Int
        var fields: [String: String]
        var body: String
    }

    func post(_ path: String, _ body: String, fields: [String] = []) async throws -> Answer {
        var request = FetchRequest(url: "http://127.0.0.1:\(port)\(path)", maxBytes: 1 << 20)
        request.method = .post
        request.upload = .bytes(Array(body.utf8))
        request.http2Only = true
        request.errorStatusIsAnswer = true
        // Without libcurl's own Accept, User-Agent and form Content-Type: the upstream then shows
        // whether the relay added any.
        request.headers = fields + ["accept:", "user-agent:"] + (fields.contains { $0.lowercased().hasPrefix("content-type:") } ? [] : ["content-type:"])
        request.keepHeaders = ["apns-id", "apns-unique-id", "attache-outcome", "attache-deadline-ms", "content-type"]
        let result = try await engine.fetch(request, deadline: .now + .seconds(20))
        var kept: [String: String] = [:]
        for (name, value) in result.headers { kept[name] = value }
        return Answer(status: result.status, fields: kept, body: String(decoding: try result.body.readAll(), as: UTF8.self))
    }
}

@Suite(.serialized) struct RelayTests {
    static let apnsFields = ["authorization: bearer eyJhbGciOiJFUzI1NiJ9.e30.c2ln", "apns-topic: com.example.app",
                             "apns-push-type: alert", "apns-priority: 10", "apns-id: 7C5F0D7E-1111-2222-3333-444455556666"]

    /// No `mutable-content`: the body reaches Apple byte for byte, with the client's headers, and
    /// the client gets Apple's answer with the outcome beside it.
    @Test func aRequestWithoutMutableContentIsForwardedAsItCame() async throws {
        try await RelayHarness.with { client, fake, _ in
            let body = #"{"aps":{"alert":"plain","badge":3},"custom":{"n":1.50}}"#
            let answer = try await client.post("/3/device/abc123", body, fields: Self.apnsFields + ["attache-deadline-ms: 2500"])
            #expect(answer.status == 200)
            #expect(answer.fields["apns-id"] == "7C5F0D7E-1111-2222-3333-444455556666")
            #expect(answer.fields["apns-unique-id"] == "unique-1")
            #expect(answer.fields["attache-outcome"] == "passthrough; reason=not-mutable")
            #expect(answer.fields["attache-deadline-ms"] == "2500")
            let got = try #require(fake.received.withLock { $0.first })
            #expect(got.path == "/3/device/abc123")
            #expect(got.body == Array(body.utf8))
            for (name, value) in [("authorization", "bearer eyJhbGciOiJFUzI1NiJ9.e30.c2ln"), ("apns-topic", "com.example.app"),
                                  ("apns-push-type", "alert"), ("apns-priority", "10")] {
                #expect(got.fields[name] == value, "\(name)")
            }
            // The relay's own field stays with the relay, and it adds none of libcurl's defaults.
            #expect(got.fields["attache-deadline-ms"] == nil)
            #expect(got.fields["accept"] == nil && got.fields["user-agent"] == nil && got.fields["content-type"] == nil)
        }
    }

    /// With `mutable-content`, Apple receives the enriched payload; the answer is Apple's.
    @Test func aMutableRequestReachesAppleEnriched() async throws {
        try await RelayHarness.with { client, fake, origin in
            let body = #"{"aps":{"alert":"sale","mutable-content":1},"image-url":"http://127.0.0.1:\#(origin.port)/photo.jpg"}"#
            let answer = try await client.post("/3/device/abc123", body, fields: Self.apnsFields)
            #expect(answer.status == 200)
            #expect(answer.fields["attache-outcome"] == "enriched")
            let got = try #require(fake.received.withLock { $0.first })
            let payload = String(decoding: got.body, as: UTF8.self)
            #expect(payload.hasPrefix(#"{"aps":{"alert":"sale","mutable-content":1},"image-url":"https://cdn.example.com/m/"#))
            #expect(payload.contains(#""attachments":[{"id":"#))
            #expect(!payload.contains("attache"))  // no outcome or header of the relay's in what Apple gets
        }
    }

    /// Apple's refusal is the client's answer, as Apple gave it.
    @Test func anUpstreamRefusalIsPassedBack() async throws {
        try await RelayHarness.with { client, _, _ in
            let answer = try await client.post("/3/device/bad", #"{"aps":{"alert":"x"}}"#, fields: Self.apnsFields)
            #expect(answer.status == 400)
            #expect(answer.body == #"{"reason":"BadDeviceToken"}"#)
            let unsigned = try await client.post("/3/device/abc", #"{"aps":{"alert":"x"}}"#)
            #expect((unsigned.status, unsigned.body) == (403, #"{"reason":"MissingProviderToken"}"#))
        }
    }

    /// An upstream that cannot be reached is never "sent": 503 ServiceUnavailable in each
    /// provider's shape, so the client retries.
    @Test func anUnreachableUpstreamIs503InTheProvidersShape() async throws {
        let closed = "http://127.0.0.1:\(try freePorts(1)[0])"
        try await RelayHarness.with(upstream: closed) { client, _, _ in
            let apns = try await client.post("/3/device/abc", #"{"aps":{"alert":"x"}}"#, fields: Self.apnsFields)
            #expect((apns.status, apns.body) == (503, #"{"reason":"ServiceUnavailable"}"#))
            let fcm = try await client.post("/v1/projects/p1/messages:send", #"{"message":{"topic":"t"}}"#)
            #expect(fcm.status == 503)
            #expect(fcm.body == #"{"error":{"code":503,"message":"ServiceUnavailable","status":"UNAVAILABLE"}}"#)
        }
    }

    /// FCM v1: Google's own image example is enriched (its alert is FCM's to build) and forwarded
    /// with `webpush` as it came; the client gets Google's `name`.
    @Test func anFCMRequestIsEnrichedAndForwarded() async throws {
        try await RelayHarness.with { client, fake, origin in
            let sample = String(decoding: Fixtures.bytes("fcm-v1-notification-alert.json", in: Fixtures.payloadDirectory), as: UTF8.self)
                .replacingAll("127.0.0.1:8765", with: "127.0.0.1:\(origin.port)")
            let answer = try await client.post("/v1/projects/p1/messages:send", sample,
                                               fields: ["authorization: Bearer ya29.token", "content-type: application/json"])
            #expect(answer.status == 200)
            #expect(answer.body == #"{"name":"projects/p1/messages/0:1"}"#)
            #expect(answer.fields["attache-outcome"] == "enriched")
            let got = String(decoding: try #require(fake.received.withLock { $0.first }).body, as: UTF8.self)
            #expect(got.contains(#""fcm_options":{"image":"https://cdn.example.com/m/"#))
            #expect(got.contains(#""webpush":{"headers":{"image":"http://127.0.0.1:\#(origin.port)/photo.jpg"}}"#))
        }
    }

    /// Apple's answers for what is not a send: too large, a path that is not a send API.
    @Test func badRequestsGetApplesAnswers() async throws {
        try await RelayHarness.with(maxBodyBytes: 5120) { client, fake, _ in
            let big = #"{"aps":{"alert":""# + String(repeating: "x", count: 6000) + #""}}"#
            let answer = try await client.post("/3/device/abc", big, fields: Self.apnsFields)
            #expect((answer.status, answer.body) == (413, #"{"reason":"PayloadTooLarge"}"#))
            let elsewhere = try await client.post("/3/devices/abc", #"{"aps":{}}"#, fields: Self.apnsFields)
            #expect((elsewhere.status, elsewhere.body) == (404, #"{"reason":"BadPath"}"#))
            #expect(fake.received.withLock { $0.isEmpty })
        }
    }

    /// A relay that holds the team's key sends its own provider token (one, reused) in place of
    /// whatever the client sent; Apple's double can check it with the key's public half.
    @Test func aRelayHoldingTheKeySignsItsOwnProviderTokens() async throws {
        let key = P256.Signing.PrivateKey()
        let token = try ProviderToken(keyPEM: key.pemRepresentation, keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
        try await RelayHarness.with(apnsToken: token) { client, fake, _ in
            for _ in 0..<2 {
                let answer = try await client.post("/3/device/abc", #"{"aps":{"alert":"x"}}"#,
                                                   fields: ["authorization: bearer client-token", "apns-topic: com.example.app"])
                #expect(answer.status == 200)
            }
            let sent = fake.received.withLock { $0.map { $0.fields["authorization"] ?? "" } }
            #expect(sent.count == 2 && sent[0] == sent[1])
            let claims = try #require(ProviderTokenTests.verify(sent[0], with: key.publicKey))
            #expect((claims.kid, claims.iss) == ("ABC123DEFG", "DEF123GHIJ"))
            #expect(!sent[0].contains("client-token"))
        }
    }
}
