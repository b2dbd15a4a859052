@testable import Attache
import Synchronization
import Testing

/// The process's one deadline timer: actions run at their instants, in order, whatever order they
/// were scheduled in; a cancelled one never runs; many cancelled entries do not keep it from the
/// live ones. Bounds are loose (an action may run late on a busy machine, never early).
@Suite(.serialized) struct DeadlineTimerTests {
    private let timer = DeadlineTimer()

    @Test func actionsRunAtTheirInstantsInOrder() async throws {
        let start = ContinuousClock.now
        let ran = Mutex<[(Int, Duration)]>([])
        // A later one first: the earlier ones, scheduled after it, must wake the timer sooner.
        for (index, ms) in [(2, 300), (1, 150), (0, 50)] {
            _ = timer.schedule(at: start + .milliseconds(ms)) {
                ran.withLock { $0.append((index, start.duration(to: .now))) }
            }
        }
        try await Task.sleep(for: .milliseconds(1300))
        let order = ran.withLock { $0 }
        #expect(order.map(\.0) == [0, 1, 2])
        for ((_, at), ms) in zip(order, [50, 150, 300]) {
            #expect(at >= .milliseconds(ms), "ran \(at), before its instant")
        }
    }

    @Test func aCancelledActionNeverRuns() async throws {
        let ran = Atomic<Int>(0)
        let start = ContinuousClock.now
        let cancelled = timer.schedule(at: start + .milliseconds(50)) { ran.add(1, ordering: .relaxed) }
        _ = timer.schedule(at: start + .milliseconds(100)) { ran.add(10, ordering: .relaxed) }
        timer.cancel(cancelled)
        try await Task.sleep(for: .milliseconds(1100))
        #expect(ran.load(ordering: .relaxed) == 10)
    }

    @Test func thousandsCancelledLeaveTheLiveOnesOnTime() async throws {
        // Past 1024 entries, cancelled ones are dropped from the heap at once: what is left must
        // still be the live entries, in order.
        let start = ContinuousClock.now
        let ran = Mutex<[Int]>([])
        var live: [Int] = []
        for i in 0..<5000 {
            let entry = timer.schedule(at: start + .milliseconds(100 + i % 200)) { ran.withLock { $0.append(i) } }
            if i % 500 == 0 { live.append(i) } else { timer.cancel(entry) }
        }
        try await Task.sleep(for: .milliseconds(1300))
        let order = ran.withLock { $0 }
        #expect(order.sorted() == live)
        #expect(order.map { $0 % 200 } == order.map { $0 % 200 }.sorted(), "ran out of order: \(order)")
    }
}
