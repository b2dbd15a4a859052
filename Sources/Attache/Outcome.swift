
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
        case timeout, fetchFailed = "fetch-failed", addressDenied = "address-denied", hostNotAllowed = "host-not-allowed", tooLarge = "too-large"
        case unsupportedType = "unsupported-type", invalidMedia = "invalid-media", limitsExceeded = "limits-exceeded"
        case payloadTooLarge = "payload-too-large", keyConflict = "key-conflict", noMedia = "no-media"
        case notMutable = "not-mutable", storeFailed = "store-failed", overloaded
        case clientGone = "client-gone", interrupted, ambiguousPayload = "ambiguous-payload"
        case extensionFailed = "extension-failed", invalidPayload = "invalid-payload"
        case unknownTenant = "unknown-tenant", tenantLimited = "tenant-limited", quotaExceeded = "quota-exceeded"
        case originTooSlow = "origin-too-slow"
    }
    private let base: Base
    private init(base: Base) { self.base = base }

    public static let timeout = Reason(base: .timeout)
    public static let fetchFailed = Reason(base: .fetchFailed)
    public static let addressDenied = Reason(base: .addressDenied)
    /// The media's host, or a redirect's, is not one the tenant may fetch from.
    public static let hostNotAllowed = Reason(base: .hostNotAllowed)
    public static let tooLarge = Reason(base: .tooLarge)
    public static let unsupportedType = Reason(base: .unsupportedType)
    public static let invalidMedia = Reason(base: .invalidMedia)
    public static let limitsExceeded = Reason(base: .limitsExceeded)
    public static let payloadTooLarge = Reason(base: .payloadTooLarge)
    public static let keyConflict = Reason(base: .keyConflict)
    public static let noMedia = Reason(base: .noMedia)
    public static let notMutable = Reason(base: .notMutable)
    /// The media directory could not be written.
    public static let storeFailed = Reason(base: .storeFailed)
    /// The service had as many enrichments in flight as it allows: answered at once, unchanged.
    public static let overloaded = Reason(base: .overloaded)
    /// The service's client closed the connection before the answer: the work stopped (logged and
    /// counted; nobody reads the answer).
    public static let clientGone = Reason(base: .clientGone)
    /// `attache enrich` got SIGTERM or SIGINT before it had an answer: the original went out.
    public static let interrupted = Reason(base: .interrupted)
    /// A key Attache reads or writes (`aps`, `mutable-content`, a dialect's keys, the attachments
    /// key) appears twice in one object: which one a device keeps is not something to bet on.
    public static let ambiguousPayload = Reason(base: .ambiguousPayload)

    /// An extension could not make its content (a sample: the ciphertext did not open), or
    /// `attache enrich --isolation process` could not start its sandboxed decoder: the original
    /// goes out.
    public static let extensionFailed = Reason(base: .extensionFailed)

    /// A queue message that is not a JSON object: the worker sends its bytes on as they came (the
    /// HTTP service answers 400 instead; it has a caller to tell).
    public static let invalidPayload = Reason(base: .invalidPayload)

    /// With a tenants file, a queue message or a relayed request that names no tenant of the file
    /// (the worker's `Attache-Tenant` header; the relay's APNs topic or FCM project): the original
    /// goes on, unenriched.
    public static let unknownTenant = Reason(base: .unknownTenant)

    /// The tenant was past its rate, concurrency or daily download quota: the original goes on,
    /// unenriched (the worker, on a message's last allowed delivery; the relay at once — the
    /// service answers 429 instead).
    public static let tenantLimited = Reason(base: .tenantLimited)

    /// The tenant's daily download quota ran out while its media was arriving: that transfer
    /// stopped there (payloads admitted together share what was left, byte by byte).
    public static let quotaExceeded = Reason(base: .quotaExceeded)

    /// The origin sent almost nothing (under 1 KB a second) for two thirds of the time the
    /// transfer had, at least 3 s: given up on before the deadline.
    public static let originTooSlow = Reason(base: .originTooSlow)

    public var description: String { base.rawValue }
}

/// What happened to one media request, from a fixed set (safe as a metric label).
public struct AttachmentOutcome: Sendable, Hashable, CustomStringConvertible {
    package enum Base: String, Sendable, Hashable {
        case attached, failed, pending
    }
    package let base: Base
    private init(_ base: Base) { self.base = base }

    /// Stored, and in the payload.
    public static let attached = AttachmentOutcome(.attached)
    /// Not attached; the report's reason says why.
    public static let failed = AttachmentOutcome(.failed)
    /// Still running when the report was taken (the deadline's snapshot); ends as one of the others.
    public static let pending = AttachmentOutcome(.pending)

    public var description: String { base.rawValue }
}
