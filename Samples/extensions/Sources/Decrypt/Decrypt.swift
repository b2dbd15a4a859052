import Attache
import AttachePayload
import Crypto
import Foundation

/// Decrypting content, as an NSE does for end-to-end encrypted messages: the sender seals the
/// alert with AES-GCM and puts it beside a placeholder alert —
///
///     {"aps": {"alert": {"title": "New message", "body": "(encrypted)"}, "mutable-content": 1},
///      "enc": {"kid": "k1", "nonce": "<base64, 12 bytes>", "ct": "<base64 ciphertext + 16-byte tag>"}}
///
/// — and the extension opens it with the key named by `kid`, into `{"title", "subtitle", "body"}`
/// (each optional), which replaces the alert's text; the `enc` field goes, since the device has
/// no use for it. An unknown key, a ciphertext that does not open (wrong key, tampered bytes) or a
/// plaintext that is not that object falls back: the original (placeholder) goes out, with reason
/// `extension-failed`. A payload without the field passes through.
///
///     let runtime = ExtensionRuntime()
///     let emission = try await runtime.process(bytes) { Decrypt(keys: ["k1": key]) }
public struct Decrypt: AsyncNotificationServiceExtension {
    public let keys: [String: SymmetricKey]
    /// The top-level field holding the sealed alert.
    public let field: String

    public init(keys: [String: SymmetricKey], field: String = "enc") {
        self.keys = keys
        self.field = field
    }

    /// Why the alert did not open (each one falls back the same way; tests tell them apart).
    enum Failure: Error, Equatable {
        case malformed(String)
        case unknownKey(String)
        case doesNotOpen
        case notAnAlert
    }

    public func didReceive(_ request: NotificationRequest) async -> ExtensionResult {
        guard let sealed = request.content.userInfo[field] else {
            return ExtensionResult(content: request.content, outcome: .passthrough)
        }
        do {
            let alert = try open(sealed)
            var content = request.content
            content.userInfo.setAlert(title: alert["title"], subtitle: alert["subtitle"], body: alert["body"])
            content.userInfo[field] = nil
            return ExtensionResult(content: content, outcome: .enriched)
        } catch {
            return ExtensionResult(content: request.content, outcome: .fallback, reason: .extensionFailed)
        }
    }

    /// Nothing half-done to offer: opening is all or nothing.
    public func serviceExtensionTimeWillExpire() -> ExtensionResult? { nil }

    func open(_ sealed: JSONValue) throws -> [String: String] {
        guard let object = sealed.objectValue else { throw Failure.malformed(field) }
        func bytes(_ key: String) throws -> Data {
            guard let text = object[key]?.stringValue, let data = Data(base64Encoded: text) else { throw Failure.malformed(key) }
            return data
        }
        guard let kid = object["kid"]?.stringValue else { throw Failure.malformed("kid") }
        guard let key = keys[kid] else { throw Failure.unknownKey(kid) }
        let nonce = try bytes("nonce"), ciphertext = try bytes("ct")
        guard ciphertext.count >= 16, let gcmNonce = try? AES.GCM.Nonce(data: nonce) else { throw Failure.malformed("nonce or ct") }
        let plaintext: Data
        do {
            let box = try AES.GCM.SealedBox(nonce: gcmNonce, ciphertext: ciphertext.dropLast(16), tag: ciphertext.suffix(16))
            plaintext = try AES.GCM.open(box, using: key)
        } catch {
            throw Failure.doesNotOpen
        }
        guard let alert = (try? JSONParser().parse(Array(plaintext)))?.objectValue else { throw Failure.notAnAlert }
        var text: [String: String] = [:]
        for name in ["title", "subtitle", "body"] {
            guard let value = alert[name] else { continue }
            guard let string = value.stringValue else { throw Failure.notAnAlert }
            text[name] = string
        }
        guard !text.isEmpty else { throw Failure.notAnAlert }
        return text
    }
}
