import AttacheSupport
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

/// The write end of the pipe the signal handler reports to (one `InterruptHandler` per process).
nonisolated(unsafe) private var signalPipeWrite: Int32 = -1

/// Runs `handler` with the signal number on SIGTERM or SIGINT, on a thread of its own (not in the
/// signal handler, so it may write files and take locks). The handler is installed with sigaction
/// before `init` returns — no signal is lost between then and the first one (a dispatch signal
/// source registers later, on libdispatch's manager thread, and a SIGINT in that window was
/// ignored). The signal handler itself only writes the number into a pipe, which is safe in a
/// signal handler. Until `cancel()`, the signals no longer end the process by themselves.
public final class InterruptHandler: Sendable {
    public init(_ handler: @escaping @Sendable (Int32) -> Void) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return }  // no pipe: the signals keep their default action
        let readEnd = fds[0]
        signalPipeWrite = fds[1]
        startDetachedThread(name: "attache-signals") {
            var number: UInt8 = 0
            while read(readEnd, &number, 1) == 1 { handler(Int32(number)) }
            close(readEnd)
        }
        for number in [SIGTERM, SIGINT] {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { received in
                var byte = UInt8(truncatingIfNeeded: received)
                _ = write(signalPipeWrite, &byte, 1)
            }
            sigemptyset(&action.sa_mask)
            action.sa_flags = SA_RESTART
            sigaction(number, &action, nil)
        }
    }

    /// The signals end the process again, and the thread stops.
    public func cancel() {
        signal(SIGTERM, SIG_DFL)
        signal(SIGINT, SIG_DFL)
        if signalPipeWrite >= 0 {
            close(signalPipeWrite)
            signalPipeWrite = -1
        }
    }
}
