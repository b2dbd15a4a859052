import AttacheMedia
import AttacheSupport
import Synchronization

/// A decoder whose conversions wait until the test lets them go: a conversion that outlasts a
/// deadline, whatever the machine's speed. Everything else is decoded at once, in this process.
public final class HeldConversions: MediaDecoder {
    /// Threads of their own: on `BlockingPool.shared` a poster's decode queued behind every other
    /// suite's (all start at once) and, on a loaded machine, missed the tests' 8 s deadlines.
    static let pool = BlockingPool(threads: 2, name: "held-conversions")
    let inner = InProcessDecoder(pool: HeldConversions.pool)
    /// Conversions started (held or not).
    public let conversions = Mutex(0)
    public let released = Mutex(false)

    public init() {}

    public func release() { released.withLock { $0 = true } }

    public func decode(_ job: DecodeJob) async throws -> DecodeResult {
        if case .movie(_, _, let options, _, _, _) = job, options.transcode != nil, options.convertsNow {
            conversions.withLock { $0 += 1 }
            while !released.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(20)) }
        }
        return try await inner.decode(job)
    }
}
