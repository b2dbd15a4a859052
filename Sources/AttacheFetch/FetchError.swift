/// Why a fetch did not produce a body. `reason` is the short, fixed string used in outcomes,
/// reports, logs and metric labels.
public struct FetchError: Error, Sendable, CustomStringConvertible {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case addressDenied = "address-denied"
            case fetchFailed = "fetch-failed"
            case tooLarge = "too-large"
            case timeout = "timeout"
            case rejected = "rejected"
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The connection would have gone to an address the policy denies.
        public static let addressDenied = Code(.addressDenied)
        /// Network failure, HTTP error status, refused scheme, too many redirects.
        public static let fetchFailed = Code(.fetchFailed)
        /// Declared or received bytes above the cap.
        public static let tooLarge = Code(.tooLarge)
        /// The payload's deadline passed first.
        public static let timeout = Code(.timeout)
        /// The prefix inspector refused the body; its own reason is in `reason`.
        public static let rejected = Code(.rejected)

        public var description: String { base.rawValue }
    }

    public let code: Code
    public let message: String
    /// HTTP status of the last response, when there was one.
    public let status: Int?
    private let inspectorReason: String?

    public init(_ code: Code, _ message: String, status: Int? = nil) {
        self.code = code
        self.message = message
        self.status = status
        self.inspectorReason = nil
    }

    /// A refusal by the prefix inspector, carrying the inspector's own reason code.
    public static func rejected(reason: String, message: String, status: Int? = nil) -> FetchError {
        FetchError(code: .rejected, message: message, status: status, inspectorReason: reason)
    }

    private init(code: Code, message: String, status: Int?, inspectorReason: String?) {
        self.code = code
        self.message = message
        self.status = status
        self.inspectorReason = inspectorReason
    }

    public var reason: String { inspectorReason ?? code.description }

    public var description: String { "\(reason): \(message)" }
}
