import AttacheMedia
import Synchronization

/// A decoder whose conversions wait until the test lets them go: a conversion that outlasts a
/// deadline, whatever the machine's speed. Everything else is decoded at once, in this process.
public final class HeldConversions: MediaDecoder {
    let inner = InProcessDecoder()
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
