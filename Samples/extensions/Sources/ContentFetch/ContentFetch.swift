import Attache
import AttacheEnrichment  // Reason(FetchError)
import AttacheFetch
import AttachePayload

/// Fetching content, as an NSE does when the push carries only an id (so the text never passes
/// through the push provider): the alert's text comes from the app's own server —
///
///     {"aps": {"alert": {"title": "New message"}, "mutable-content": 1}, "message-id": "m-1042"}
///
/// becomes the alert of `GET <endpoint>/m-1042`, a JSON `{"title", "subtitle", "body"}` (each
/// optional) — fetched through Attache's fetch engine (so the address policy, byte caps and
/// redirect rules hold) within the payload's deadline. A failed fetch falls back with the
/// fetch's reason (`timeout`, `fetch-failed`, `address-denied`, `too-large`); an answer that is
/// not that object with `extension-failed`. No id: passes through.
///
///     let engine = try FetchEngine()
///     let runtime = ExtensionRuntime()
///     let emission = try await runtime.process(bytes) { ContentFetch(engine: engine, endpoint: "https://api.example.com/messages") }
public struct ContentFetch: AsyncNotificationServiceExtension {
    public let engine: FetchEngine
    /// The URL a message id is appended to, after a `/`.
    public let endpoint: String
    public let idField: String
    /// An alert's text is small: more than this is not one.
    public let maxBytes: Int

    public init(engine: FetchEngine, endpoint: String, idField: String = "message-id", maxBytes: Int = 16_384) {
        self.engine = engine
        self.endpoint = endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint
        self.idField = idField
        self.maxBytes = maxBytes
    }

    public func didReceive(_ request: NotificationRequest) async -> ExtensionResult {
        guard let id = request.content.userInfo[idField]?.stringValue else {
            return ExtensionResult(content: request.content, outcome: .passthrough)
        }
        // The id becomes a path segment: only characters that need no escaping, so a sender
        // cannot point the request elsewhere (`../`, `?`, `#`, `@`).
        let safe = !id.isEmpty && id.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2D || b == 0x5F || (b == 0x2E && id != "." && id != "..")
        }
        guard safe else { return ExtensionResult(content: request.content, outcome: .fallback, reason: .extensionFailed) }
        let body: [UInt8]
        do {
            let result = try await engine.fetch(FetchRequest(url: "\(endpoint)/\(id)", maxBytes: maxBytes), deadline: request.deadline)
            body = try result.body.readAll()
        } catch let error as FetchError {
            return ExtensionResult(content: request.content, outcome: .fallback, reason: Reason(error))
        } catch {
            // Only CancellationError is left: the runtime cancelled at the deadline, and answers
            // with its own timeout whatever this says.
            return ExtensionResult(content: request.content, outcome: .fallback, reason: .timeout)
        }
        guard let alert = (try? JSONParser().parse(body))?.objectValue else {
            return ExtensionResult(content: request.content, outcome: .fallback, reason: .extensionFailed)
        }
        let text = ["title", "subtitle", "body"].map { alert[$0]?.stringValue }
        guard text.contains(where: { $0 != nil }) else {
            return ExtensionResult(content: request.content, outcome: .fallback, reason: .extensionFailed)
        }
        var content = request.content
        content.userInfo.setAlert(title: text[0], subtitle: text[1], body: text[2])
        return ExtensionResult(content: content, outcome: .enriched)
    }

    /// The text is all or nothing: the placeholder alert is the best attempt.
    public func serviceExtensionTimeWillExpire() -> ExtensionResult? { nil }
}
