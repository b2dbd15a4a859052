/// What happened to a payload. Every payload in gets exactly one payload out and one outcome.
public enum Outcome: String, Sendable, Codable {
    /// Every media request attached.
    case enriched
    /// Some attached, some failed.
    case partial
    /// Nothing to do: not mutable, or no media.
    case passthrough
    /// Deadline passed or the media was unusable: the original (or best attempt) went out.
    case fallback
}

/// Why, from a fixed set (safe as a metric label).
public struct Reason: Sendable, Hashable, CustomStringConvertible {
    private enum Base: String, Sendable, Hashable {
        case timeout, fetchFailed = "fetch-failed", addressDenied = "address-denied", tooLarge = "too-large"
        case unsupportedType = "unsupported-type", invalidMedia = "invalid-media", limitsExceeded = "limits-exceeded"
        case payloadTooLarge = "payload-too-large", keyConflict = "key-conflict", noMedia = "no-media"
        case notMutable = "not-mutable", storeFailed = "store-failed", overloaded
        case clientGone = "client-gone", interrupted, ambiguousPayload = "ambiguous-payload"
    }
    private let base: Base
    private init(_ base: Base) { self.base = base }

    public static let timeout = Reason(.timeout)
    public static let fetchFailed = Reason(.fetchFailed)
    public static let addressDenied = Reason(.addressDenied)
    public static let tooLarge = Reason(.tooLarge)
    public static let unsupportedType = Reason(.unsupportedType)
    public static let invalidMedia = Reason(.invalidMedia)
    public static let limitsExceeded = Reason(.limitsExceeded)
    public static let payloadTooLarge = Reason(.payloadTooLarge)
    public static let keyConflict = Reason(.keyConflict)
    public static let noMedia = Reason(.noMedia)
    public static let notMutable = Reason(.notMutable)
    /// The media directory could not be written.
    public static let storeFailed = Reason(.storeFailed)
    /// The service had as many enrichments in flight as it allows: answered at once, unchanged.
    public static let overloaded = Reason(.overloaded)
    /// The service's client closed the connection before the answer: the work stopped (logged and
    /// counted; nobody reads the answer).
    public static let clientGone = Reason(.clientGone)
    /// `attache enrich` got SIGTERM or SIGINT before it had an answer: the original went out.
    public static let interrupted = Reason(.interrupted)
    /// A key Attache reads or writes (`aps`, `mutable-content`, a dialect's keys, the attachments
    /// key) appears twice in one object: which one a device keeps is not something to bet on.
    public static let ambiguousPayload = Reason(.ambiguousPayload)

    /// Maps a reason string from a lower layer (fetch, media); unknown strings become `fetch-failed`.
    public init(code: String) {
        self = Base(rawValue: code).map(Reason.init) ?? .fetchFailed
    }

    public var description: String { base.rawValue }
}
