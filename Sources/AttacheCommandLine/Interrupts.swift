import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Taken once: the first taker writes the process's one output.
public final class EmissionClaim: Sendable {
    private let taken = Atomic<Bool>(false)
    public init() {}
    /// True for the first caller only.
    public func take() -> Bool {
        !taken.exchange(true, ordering: .acquiringAndReleasing)
    }
}

/// Runs `handler` with the signal number on SIGTERM or SIGINT (on a queue of its own, not in a
/// signal handler, so it may write files and take locks). Until `cancel()`, the signals no longer
/// end the process by themselves; the handler decides.
// @unchecked: `sources` is set once in init and only cancelled after (DispatchSource is thread-safe).
public final class InterruptHandler: @unchecked Sendable {
    private let sources: [any DispatchSourceSignal]

    public init(_ handler: @escaping @Sendable (Int32) -> Void) {
        let queue = DispatchQueue(label: "attache.signals")
        sources = [SIGTERM, SIGINT].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { handler(number) }
            source.resume()
            return source
        }
    }

    public func cancel() {
        for source in sources { source.cancel() }
        signal(SIGTERM, SIG_DFL)
        signal(SIGINT, SIG_DFL)
    }
}
