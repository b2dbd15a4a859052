internal import CMalloc
import NIOPosix
import ServiceLifecycle

/// Gives freed memory back to the system every few seconds while `due` says connections have
/// been closing, and for `after` more: glibc keeps what a burst of connections freed in its
/// per-thread heaps, where it stays, counted in the process's RSS, long after the connections
/// are gone (a relay's RSS stayed at 280 MB after rapid-reset clients left, 23 MB of it in use),
/// and the work those connections left behind may finish after the last of them closed.
/// `malloc_trim` returns every free page of every heap; it runs on NIO's thread pool, off the
/// event loops.
struct MemoryRelease: Service {
    let due: @Sendable () -> Bool
    var every: Duration = .seconds(2)
    var after = 5

    func run() async throws {
        try? await cancelWhenGracefulShutdown {
            var left = 0
            while true {
                try await Task.sleep(for: every)
                left = due() ? after : left - 1
                guard left > 0 else { continue }
                try await NIOThreadPool.singleton.runIfActive { _ = malloc_trim(0) }
            }
        }
    }
}
