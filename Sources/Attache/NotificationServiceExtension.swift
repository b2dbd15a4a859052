import AttachePayload
import Logging

/// The content of a notification: its payload (`userInfo`, every key kept in order) and the
/// attachments an extension adds. Alert accessors read and write `aps.alert`.
public struct NotificationContent: Sendable, Equatable {
    public var userInfo: JSONObject
    public var attachments: [AttachmentEntry]

    public init(userInfo: JSONObject, attachments: [AttachmentEntry] = []) {
        self.userInfo = userInfo
        self.attachments = attachments
    }

    public var title: String? {
        get { userInfo.alertTitle }
        set { userInfo.setAlert(title: newValue, subtitle: nil, body: nil) }
    }

    public var body: String? {
        get { userInfo.alertBody }
        set { userInfo.setAlert(title: nil, subtitle: nil, body: newValue) }
    }
}

public struct NotificationRequest: Sendable {
    public let identifier: String
    public let content: NotificationContent
    /// The payload as received, original bytes included.
    public let payload: Payload
    /// When the runtime stops waiting (what `serviceExtensionTimeWillExpire` is about).
    public let deadline: ContinuousClock.Instant
    /// When the payload arrived (report offsets are measured from here).
    public let receivedAt: ContinuousClock.Instant
    /// The caller's logger, with its request's metadata (a service's request id): what an
    /// extension logs about this payload goes here. Silent unless the caller gives one.
    public let logger: Logger
    /// The key the runtime will write the attachments under: a payload that has it already ends
    /// as a key conflict once attachments are made, so an extension may say so before any work.
    public let attachmentsKey: String

    public init(identifier: String, payload: Payload, deadline: ContinuousClock.Instant, receivedAt: ContinuousClock.Instant = .now,
                attachmentsKey: String = AttachmentEntry.defaultKey, logger: Logger = ExtensionRuntime.silent) {
        self.attachmentsKey = attachmentsKey
        self.identifier = identifier
        self.payload = payload
        self.deadline = deadline
        self.receivedAt = receivedAt
        self.logger = logger
        self.content = NotificationContent(userInfo: payload.root)
    }
}

/// The shape of Apple's `UNNotificationServiceExtension`, so NSE logic written for iOS runs on
/// Linux: `didReceive` gets the request and a handler to call once with the new content;
/// `serviceExtensionTimeWillExpire` is the last chance to deliver a best attempt.
public protocol NotificationServiceExtension: AnyObject, Sendable {
    func didReceive(_ request: NotificationRequest, withContentHandler contentHandler: @escaping @Sendable (NotificationContent) -> Void)
    func serviceExtensionTimeWillExpire()
}

/// What an async extension hands back: the content, and how it went.
public struct ExtensionResult: Sendable {
    public var content: NotificationContent
    public var outcome: Outcome
    public var reason: Reason?
    public var attachments: [AttachmentReport]

    public init(content: NotificationContent, outcome: Outcome, reason: Reason? = nil, attachments: [AttachmentReport] = []) {
        self.content = content
        self.outcome = outcome
        self.reason = reason
        self.attachments = attachments
    }
}

/// The async form the runtime drives. It must return promptly when its task is cancelled
/// (the runtime cancels it at the deadline).
public protocol AsyncNotificationServiceExtension: Sendable {
    func didReceive(_ request: NotificationRequest) async -> ExtensionResult
    /// Called once at the deadline, while `didReceive` may still be running: the best attempt so far.
    func serviceExtensionTimeWillExpire() -> ExtensionResult?
    /// The result, when it is at hand with nothing to wait for (the media enricher's: every media
    /// already in its cache); nil: the runtime calls `didReceive` on the same instance next. Called
    /// first, on the thread that hands the payload over (a relay's event loop), so it must not
    /// block. The default is nil.
    func resultAtOnce(_ request: NotificationRequest) -> ExtensionResult?
}

extension AsyncNotificationServiceExtension {
    public func resultAtOnce(_ request: NotificationRequest) -> ExtensionResult? { nil }
}
