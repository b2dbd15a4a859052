import AttacheSupport
import Testing

/// Runs a test (each test of a suite) on threads of its own instead of the test runner's
/// cooperative threads.
///
/// Those are one per core, and every suite's tasks run on them — the service's connections, the
/// origin's clients, the timers tests wait on. A test that decodes, resamples or generates
/// megabytes synchronously (seconds in a debug build) holds one of them for that long, and with
/// two cores a handful of such tests starting together stalled every other suite for 3–4 s: a
/// 500 ms header timeout was seen closing after 5 s, and a slow-origin test's requests did not
/// reach the origin within 5 s. Under this trait the test's own code, and the child tasks it
/// starts, run on `TestThreads` (SE-0417 task executor preference), where the kernel shares the
/// cores fairly with the runner's threads; the test's expectations are recorded as usual, as it
/// is still the same task.
public struct OnTestThreads: TestTrait, SuiteTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(for test: Test, testCase: Test.Case?,
                             performing function: @Sendable () async throws -> Void) async throws {
        try await withTaskExecutorPreference(TestThreads.shared) { try await function() }
    }
}

extension Trait where Self == OnTestThreads {
    /// CPU-heavy synchronous test code runs on threads of its own (see `OnTestThreads`).
    public static var onTestThreads: Self { Self() }
}

/// A task executor on two plain threads, for the tests marked `.onTestThreads`.
public final class TestThreads: TaskExecutor {
    public static let shared = TestThreads(threads: 2)

    private let queue = BlockingQueue<UnownedJob>()

    init(threads: Int) {
        for i in 0..<threads {
            startDetachedThread(name: "test-work-\(i)") { [self] in
                while true {
                    if let job = queue.take() { job.runSynchronously(on: asUnownedTaskExecutor()) }
                }
            }
        }
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        queue.put(UnownedJob(job))
    }
}
