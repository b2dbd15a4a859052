import Attache

/// A user's own service extension, written as on iOS: it prefixes the title and delivers the new
/// content through the handler; at the deadline it hands over what it has.
///
/// Run it with the runtime:
///
///     let runtime = ExtensionRuntime()
///     let emission = try await runtime.process(bytes) { CallbackExtensionAdapter(TitleRewriter()) }
public final class TitleRewriter: NotificationServiceExtension, @unchecked Sendable {
    // Touched by `didReceive` and then `serviceExtensionTimeWillExpire`, never at once: the runtime
    // calls the second only after the first has handed its handler over (as iOS does).
    private var contentHandler: (@Sendable (NotificationContent) -> Void)?
    private var bestAttemptContent: NotificationContent?
    private let prefix: String

    public init(prefix: String = "[Attache] ") {
        self.prefix = prefix
    }

    public func didReceive(_ request: NotificationRequest, withContentHandler contentHandler: @escaping @Sendable (NotificationContent) -> Void) {
        self.contentHandler = contentHandler
        var content = request.content
        content.title = prefix + (content.title ?? "")
        bestAttemptContent = content
        contentHandler(content)
    }

    public func serviceExtensionTimeWillExpire() {
        if let contentHandler, let bestAttemptContent {
            contentHandler(bestAttemptContent)
        }
    }
}
