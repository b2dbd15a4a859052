/// The deadline rule: how long a payload is given, and what is emitted when that passes first.
/// The runtime gives each payload `default`; every front door that takes a deadline with each
/// payload (the service's request header, the worker's message header, the relay's) turns it into
/// a budget here, so the same `Attache-Deadline-Ms` value means the same budget wherever it is sent.
///
/// - a whole number of milliseconds (ASCII digits, spaces and tabs around them ignored, however
///   many digits): that budget, at most `maximum`; `0` is a deadline already passed, answered at
///   once (1 ms) with the original;
/// - absent, empty, or anything else (`-5`, `1.5`, `2s`, `5` and a no-break space): `default`, as
///   if it were absent — a malformed header never holds a payload back and never refuses one
///   (`isMalformed` tells a front door to log it).
public struct DeadlinePolicy: Sendable, Equatable {
    /// The header a request or a message names its deadline in, and an answer the budget it got.
    public static let header = "Attache-Deadline-Ms"
    /// What a payload is given when nothing names its deadline (`enrich`, `batch`, the worker).
    public static let standardDefault: Duration = .seconds(10)
    /// The longest deadline a header may ask for.
    public static let standardMaximum: Duration = .seconds(30)
    /// The service's default: a pipeline calling it per message rarely waits longer.
    public static let service = DeadlinePolicy(default: .seconds(3))

    /// What the runtime emits when a payload's deadline passes before its extension finished.
    public enum OnTimeout: String, Sendable, CaseIterable {
        /// The original bytes, unchanged.
        case original
        /// What the extension had finished (its `serviceExtensionTimeWillExpire` result).
        case bestAttempt = "best-attempt"
    }

    /// A payload's budget when nothing names another, counted from when it is handed over.
    /// Never above `maximum`: raising it raises the maximum too.
    public var `default`: Duration {
        didSet { maximum = max(maximum, `default`) }
    }
    /// The longest budget a deadline header may ask for. Never below `default`.
    public var maximum: Duration {
        didSet { maximum = max(maximum, `default`) }
    }
    public var onTimeout: OnTimeout

    /// `maximum` below `default` is raised to it: a payload that names no deadline gets the default.
    public init(default: Duration = DeadlinePolicy.standardDefault, maximum: Duration = DeadlinePolicy.standardMaximum,
                onTimeout: OnTimeout = .original) {
        self.default = `default`
        self.maximum = max(maximum, `default`)
        self.onTimeout = onTimeout
    }

    /// The budget for a payload whose header reads `value` (nil: no header).
    public func budget(header value: String?) -> Duration {
        guard let ms = value.flatMap(Self.milliseconds) else { return `default` }
        return min(.milliseconds(max(1, ms)), maximum)
    }

    /// The same policy with a lower maximum (the worker's, which a redelivery must not overtake).
    public func capped(at limit: Duration) -> DeadlinePolicy {
        DeadlinePolicy(default: min(`default`, limit), maximum: min(maximum, limit), onTimeout: onTimeout)
    }

    /// Whether a header was sent with a value that is not a deadline (then `default` applies).
    /// Absent and empty are not malformed.
    public static func isMalformed(_ value: String?) -> Bool {
        guard let value, !value.utf8.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) else { return false }
        return milliseconds(value) == nil
    }

    /// A header's whole milliseconds: ASCII digits between optional spaces or tabs. More than
    /// twelve digits (over 31 years) read as twelve nines: above any maximum, so capped, never
    /// an overflow and never the default.
    static func milliseconds(_ text: String) -> Int? {
        let digits = text.utf8.drop { $0 == 0x20 || $0 == 0x09 }.reversed().drop { $0 == 0x20 || $0 == 0x09 }.reversed()
        guard !digits.isEmpty, digits.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        guard digits.count <= 12 else { return 999_999_999_999 }
        return digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
    }
}
