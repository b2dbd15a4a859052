import Synchronization

/// How much work a door has under way, against a limit it is given at each entry: the service's
/// enrichments (`--max-in-flight`), the relay's streams.
public final class InFlight: Sendable {
    private let count = Atomic<Int>(0)

    public init() {}

    /// Takes a slot and returns how many are taken with it, or nil (and none taken) when `limit`
    /// already are.
    public func enter(limit: Int) -> Int? {
        let now = count.wrappingAdd(1, ordering: .relaxed).newValue
        if now > limit {
            count.wrappingSubtract(1, ordering: .relaxed)
            return nil
        }
        return now
    }

    /// Gives a slot back; returns how many are still taken.
    @discardableResult
    public func leave() -> Int { count.wrappingSubtract(1, ordering: .relaxed).newValue }
}
