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
public final class BlockingPool: Sendable {
    private let queue = BlockingQueue<@Sendable () -> Void>()

    public let threadCount: Int

    public init(threads: Int, name: String = "attache-pool") {
        threadCount = max(1, threads)
        for i in 0..<threadCount {
            startDetachedThread(name: "\(name)-\(i)") { [queue] in
                while true { queue.take()?() }
            }
        }
    }

    /// Shared pool sized to the machine's cores.
    public static let shared = BlockingPool(threads: max(2, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))))

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
                queue.put {
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

    /// `run`, given up at `deadline` with `DeadlinePassed`: for blocking work that cannot be
    /// interrupted (a write, an fsync), so that the caller keeps its deadline while the job ends
    /// on its thread and its result is dropped.
    public func run<T: Sendable>(until deadline: ContinuousClock.Instant,
                                 _ body: @escaping @Sendable (AbortFlag) throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await self.run(body) }
            group.addTask {
                try await Task.sleep(until: deadline, clock: .continuous)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let value = first else { throw DeadlinePassed() }
            return value
        }
    }
}

/// Blocking work given up because its deadline passed first.
public struct DeadlinePassed: Error, CustomStringConvertible {
    public init() {}
    public var description: String { "the deadline passed first" }
}
