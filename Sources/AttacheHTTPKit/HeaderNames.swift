import Attache
import HTTPTypes

/// The header fields Attache reads or writes over HTTP, named once for the service, the relay and
/// the lab.
extension HTTPField.Name {
    /// The outcome of a payload's enrichment, `enriched` or `fallback; reason=timeout` and the like.
    public static let attacheOutcome = Self(Emission.outcomeHeaderName)!
    /// The budget a request asks for, in whole milliseconds; the answer's is the budget applied.
    public static let attacheDeadline = Self(DeadlinePolicy.header)!
    /// A request's id, echoed (or made) in the answer.
    public static let requestID = Self("X-Request-Id")!
    public static let serverTiming = Self("Server-Timing")!
}
