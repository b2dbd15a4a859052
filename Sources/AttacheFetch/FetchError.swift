/// Why a fetch did not produce a body: a code from a fixed set, and a message for people.
public struct FetchError: Error, Sendable, CustomStringConvertible {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        /// `package`: Attache converts codes to reasons with an exhaustive switch.
        package enum Base: String, Sendable, Hashable {
            case addressDenied = "address-denied"
            case hostNotAllowed = "host-not-allowed"
            case fetchFailed = "fetch-failed"
            case tooLarge = "too-large"
            case timeout = "timeout"
            case rejected = "rejected"
            case quotaExceeded = "quota-exceeded"
            case tooSlow = "origin-too-slow"
        }
        package let base: Base
        private init(_ base: Base) { self.base = base }

        /// The connection would have gone to an address the policy denies.
        public static let addressDenied = Code(.addressDenied)
        /// The URL's host (or a redirect's) is not among the hosts allowed by name (a tenant's).
        public static let hostNotAllowed = Code(.hostNotAllowed)
        /// Network failure, HTTP error status, refused scheme, too many redirects.
        public static let fetchFailed = Code(.fetchFailed)
        /// Declared or received bytes above the cap.
        public static let tooLarge = Code(.tooLarge)
        /// The payload's deadline passed first.
        public static let timeout = Code(.timeout)
        /// The prefix inspector refused the body; its own error is `rejection`.
        public static let rejected = Code(.rejected)
        /// The request's allowance (a tenant's daily download quota) ran out during the transfer.
        public static let quotaExceeded = Code(.quotaExceeded)
        /// The origin sent almost nothing for too long (see `FetchEngine.Configuration.lowSpeedLimit`).
        public static let tooSlow = Code(.tooSlow)

        public var description: String { base.rawValue }
    }

    public let code: Code
    public let message: String
    /// HTTP status of the last response, when there was one.
    public let status: Int?
    /// The prefix inspector's own error, when it refused the body (code `rejected`).
    public let rejection: (any Error & Sendable)?

    public init(_ code: Code, _ message: String, status: Int? = nil) {
        self.code = code
        self.message = message
        self.status = status
        self.rejection = nil
    }

    /// A refusal by the prefix inspector, carrying the inspector's own error.
    public static func rejected(by rejection: any Error & Sendable, status: Int? = nil) -> FetchError {
        FetchError(code: .rejected, message: "\(rejection)", status: status, rejection: rejection)
    }

    private init(code: Code, message: String, status: Int?, rejection: (any Error & Sendable)?) {
        self.code = code
        self.message = message
        self.status = status
        self.rejection = rejection
    }

    public var description: String { rejection.map { "\($0)" } ?? "\(code): \(message)" }
}
