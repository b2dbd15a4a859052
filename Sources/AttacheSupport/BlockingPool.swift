import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A cancellation flag that blocking C work polls between rows; set when the awaiting task is
/// cancelled, so abandoned decodes stop soon instead of running to the end.
public final class AbortFlag: Sendable {
    private let flag = Atomic<Int32>(0)
    public init() {}
    public func set() { flag.store(1, ordering: .relaxed) }
    public var isSet: Bool { flag.load(ordering: .relaxed) != 0 }
}

/// A fixed set of threads for blocking work (decode, scale, encode, file I/O).
///
/// `run` is abandon-on-cancel: when the calling task is cancelled it resumes at once with
/// `CancellationError` and raises the job's `AbortFlag`; the job finishes (or aborts) on its
/// thread afterwards and its result is dropped. That is what lets a deadline be kept while a
/// decoder is busy.
// @unchecked: `state` is guarded by its Mutex; `semaphore` is a POSIX semaphore, safe from any thread.
public final class BlockingPool: @unchecked Sendable {
    private struct State {
        /// A job's slot is emptied when a thread takes it: a finished job's captures (a fetched
        /// body and its temp file) must not outlive it until the queue is next compacted.
        var jobs: [(@Sendable () -> Void)?] = []
        var head = 0
        var stopped = false
    }
    private let state = Mutex(State())
    private let semaphore: UnsafeMutablePointer<sem_t>  // counts queued jobs; freed never (pools live for the process)

    public let threadCount: Int

    public init(threads: Int, name: String = "attache-pool") {
        threadCount = max(1, threads)
        semaphore = .allocate(capacity: 1)
        sem_init(semaphore, 0, 0)
        for i in 0..<threadCount {
            startDetachedThread(name: "\(name)-\(i)") { [self] in self.workLoop() }
        }
    }

    /// Shared pool sized to the machine's cores.
    public static let shared = BlockingPool(threads: max(2, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))))

    private func workLoop() {
        while true {
            while sem_wait(semaphore) != 0 {}
            let job: (@Sendable () -> Void)? = state.withLock { s in
                guard s.head < s.jobs.count else { return nil }
                let job = s.jobs[s.head].take()
                s.head += 1
                if s.head > 64 && s.head * 2 > s.jobs.count {
                    s.jobs.removeFirst(s.head)
                    s.head = 0
                }
                return job
            }
            job?()
        }
    }

    private func enqueue(_ job: @escaping @Sendable () -> Void) {
        state.withLock { $0.jobs.append(job) }
        sem_post(semaphore)
    }

    public func run<T: Sendable>(_ body: @escaping @Sendable (AbortFlag) throws -> T) async throws -> T {
        let abort = AbortFlag()
        let once = Mutex<CheckedContinuation<T, any Error>?>(nil)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                once.withLock { $0 = continuation }
                if Task.isCancelled {
                    abort.set()
                    once.withLock { $0.take() }?.resume(throwing: CancellationError())
                    return
                }
                enqueue {
                    guard !abort.isSet else { return }
                    let result = Result { try body(abort) }
                    once.withLock { $0.take() }?.resume(with: result)
                }
            }
        } onCancel: {
            abort.set()
            once.withLock { $0.take() }?.resume(throwing: CancellationError())
        }
    }
}
