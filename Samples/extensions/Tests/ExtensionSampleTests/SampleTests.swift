import Attache
import AttacheFetch
import AttacheOrigin
import AttachePayload
import AttacheTesting
import Crypto
import Foundation
import Testing
import ContentFetch
@testable import Decrypt
import TitleRewriter

/// Each sample under the runtime, as a user runs it: what it makes in time, and the original
/// (byte for byte) when it cannot.
@Suite struct TitleRewriterTests {
    @Test func rewritesTheTitleKeepingEverythingElse() async throws {
        let input = Array(#"{"aps":{"alert":{"title":"Hello","body":"b"},"mutable-content":1},"x":[1.10]}"#.utf8)
        let emission = try await ExtensionRuntime().process(input) { CallbackExtensionAdapter(TitleRewriter(prefix: "→ ")) }
        #expect(emission.outcome == .enriched)
        #expect(String(decoding: emission.bytes, as: UTF8.self) == #"{"aps":{"alert":{"title":"→ Hello","body":"b"},"mutable-content":1},"x":[1.10]}"#)
    }
}

@Suite struct DecryptTests {
    let key = SymmetricKey(size: .bits256)

    /// A payload whose `enc` field seals `plaintext` with `key`.
    func payload(_ plaintext: String, key: SymmetricKey, kid: String = "k1", tamper: Bool = false) throws -> [UInt8] {
        let box = try AES.GCM.seal(Data(plaintext.utf8), using: key)
        var sealed = box.ciphertext + box.tag
        if tamper { sealed[sealed.startIndex] ^= 1 }
        let nonce = Data(box.nonce).base64EncodedString(), ct = sealed.base64EncodedString()
        return Array(#"{"aps":{"alert":{"title":"New message","body":"(encrypted)"},"mutable-content":1},"enc":{"kid":"\#(kid)","nonce":"\#(nonce)","ct":"\#(ct)"},"thread":7}"#.utf8)
    }

    func run(_ input: [UInt8]) async throws -> Emission {
        let keys = ["k1": key]
        return try await ExtensionRuntime().process(input) { Decrypt(keys: keys) }
    }

    @Test func opensTheAlertAndDropsTheSealedField() async throws {
        let emission = try await run(payload(#"{"title":"Ana","body":"See you at 8"}"#, key: key))
        #expect(emission.outcome == .enriched)
        #expect(String(decoding: emission.bytes, as: UTF8.self) == #"{"aps":{"alert":{"title":"Ana","body":"See you at 8"},"mutable-content":1},"thread":7}"#)
    }

    @Test func aWrongKeyATamperedCiphertextOrAnUnknownKidFallsBackToTheOriginal() async throws {
        let plaintext = #"{"title":"Ana","body":"See you at 8"}"#
        for input in [
            try payload(plaintext, key: SymmetricKey(size: .bits256)),
            try payload(plaintext, key: key, tamper: true),
            try payload(plaintext, key: key, kid: "k2"),
            try payload("not an alert", key: key),
            Array(#"{"aps":{"alert":"x","mutable-content":1},"enc":{"kid":"k1","nonce":"!!","ct":"AAAA"}}"#.utf8),
        ] {
            let emission = try await run(input)
            #expect(emission.outcome == .fallback)
            #expect(emission.reason == .extensionFailed)
            #expect(emission.bytes == input)
        }
    }

    @Test func eachFailureIsTold() throws {
        let decrypt = Decrypt(keys: ["k1": key])
        func failure(_ input: [UInt8]) throws -> Decrypt.Failure? {
            let sealed = try #require(try JSONParser().parse(input).objectValue?["enc"])
            do { _ = try decrypt.open(sealed); return nil } catch { return error as? Decrypt.Failure }
        }
        #expect(try failure(payload("{}", key: SymmetricKey(size: .bits256))) == .doesNotOpen)
        #expect(try failure(payload("{}", key: key, kid: "k9")) == .unknownKey("k9"))
        #expect(try failure(payload(#"{"title":1}"#, key: key)) == .notAnAlert)
    }

    @Test func withoutTheFieldItPassesThrough() async throws {
        let input = Array(#"{"aps":{"alert":"plain","mutable-content":1}}"#.utf8)
        let emission = try await run(input)
        #expect(emission.outcome == .passthrough)
        #expect(emission.bytes == input)
    }
}

@Suite struct ContentFetchTests {
    static func origin() throws -> Origin {
        try Origin(files: [
            "/messages/m-1": Array(#"{"title":"Ana","body":"See you at 8"}"#.utf8),
            "/messages/bad": Array("<html>".utf8),
        ])
    }

    func run(_ id: String, origin: Origin, deadline: Duration = .seconds(5), allow: Bool = true) async throws -> (Emission, [UInt8]) {
        let policy = AddressPolicy(allowed: allow ? [CIDR("127.0.0.1/32")!] : [])
        let engine = try FetchEngine(configuration: .init(policy: policy))
        defer { engine.shutdown() }
        let input = Array(#"{"aps":{"alert":{"title":"New message"},"mutable-content":1},"message-id":"\#(id)"}"#.utf8)
        let runtime = ExtensionRuntime(configuration: .init(deadlinePolicy: .init(default: deadline)))
        let endpoint = "http://127.0.0.1:\(origin.port)/messages"
        return (try await runtime.process(input) { ContentFetch(engine: engine, endpoint: endpoint) }, input)
    }

    @Test func theAlertComesFromTheAppServer() async throws {
        let origin = try Self.origin()
        defer { origin.stop() }
        let (emission, _) = try await run("m-1", origin: origin)
        #expect(emission.outcome == .enriched)
        #expect(String(decoding: emission.bytes, as: UTF8.self) == #"{"aps":{"alert":{"title":"Ana","body":"See you at 8"},"mutable-content":1},"message-id":"m-1"}"#)
    }

    @Test func failuresFallBackWithTheirReason() async throws {
        let origin = try Self.origin()
        defer { origin.stop() }
        for (id, allow, reason) in [("missing", true, Reason.fetchFailed), ("m-1", false, .addressDenied), ("bad", true, .extensionFailed), ("..", true, .extensionFailed), ("a%2F..", true, .extensionFailed)] {
            let (emission, input) = try await run(id, origin: origin, allow: allow)
            #expect(emission.outcome == .fallback, "\(id)")
            #expect(emission.reason == reason, "\(id)")
            #expect(emission.bytes == input)
        }
    }

    /// The app server never answers: the original goes out at the deadline, not later.
    @Test func aHungServerCostsTheDeadlineAndNoMore() async throws {
        let origin = try Origin(files: ["/messages/m-1": Array("{}".utf8)], faults: ["/messages/m-1": ["hang": "1"]])
        defer { origin.stop() }
        let deadline = Duration.milliseconds(300)
        let start = ContinuousClock.now
        let (emission, input) = try await run("m-1", origin: origin, deadline: deadline)
        #expect(emission.reason == .timeout)
        #expect(emission.bytes == input)
        #expect(start.duration(to: .now) < deadline + .seconds(1))
    }
}
