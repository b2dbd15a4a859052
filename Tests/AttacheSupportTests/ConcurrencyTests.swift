import AttacheTesting
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import AttacheSupport

@Suite struct AsyncSemaphoreTests {
    /// Never more than the permits at once, and every task gets its turn.
    @Test func holdsAtMostItsPermits() async throws {
        let semaphore = AsyncSemaphore(3)
        final class Counts: Sendable { let value = Mutex((now: 0, most: 0, done: 0)) }
        let box = Counts()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<30 {
                group.addTask {
                    try await semaphore.withPermit {
                        box.value.withLock { $0.now += 1; $0.most = max($0.most, $0.now) }
                        try await Task.sleep(for: .milliseconds(5))
                        box.value.withLock { $0.now -= 1; $0.done += 1 }
                    }
                }
            }
            try await group.waitForAll()
        }
        let final = box.value.withLock { $0 }
        #expect(final.most <= 3 && final.most >= 1)
        #expect(final.done == 30)
    }

    /// A waiter whose task is cancelled leaves the queue at once, without the permit.
    @Test func aCancelledWaiterLeavesAtOnce() async throws {
        let semaphore = AsyncSemaphore(1)
        let release = Mutex<CheckedContinuation<Void, Never>?>(nil)
        let holder = Task {
            try await semaphore.withPermit {
                await withCheckedContinuation { c in release.withLock { $0 = c } }
            }
        }
        #expect(await eventually { release.withLock { $0 != nil } })
        let waiter = Task { try await semaphore.withPermit { "ran" } }
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        release.withLock { $0.take() }?.resume()
        try await holder.value
        #expect(try await semaphore.withPermit { "free" } == "free")
    }
}

@Suite struct BlockingPoolTests {
    @Test func runsOnItsThreadsAndReturns() async throws {
        let pool = BlockingPool(threads: 2, name: "test-pool")
        let results = try await withThrowingTaskGroup(of: Int.self) { group in
            for i in 0..<20 { group.addTask { try await pool.run { _ in i * i } } }
            return try await group.reduce(0, +)
        }
        #expect(results == (0..<20).map { $0 * $0 }.reduce(0, +))
    }

    /// Cancelling abandons the job: the caller is answered at once, the job's thread is told to
    /// stop through its abort flag, and a job not yet started never runs.
    @Test func cancellationAbandonsTheJob() async throws {
        let pool = BlockingPool(threads: 1, name: "test-pool")
        let sawAbort = Mutex(false)
        let started = Mutex(false)
        let busy = Task {
            try await pool.run { abort in
                started.withLock { $0 = true }
                while !abort.isSet { usleepish() }
                sawAbort.withLock { $0 = true }
            }
        }
        #expect(await eventually { started.withLock { $0 } })
        let queuedRan = Mutex(false)
        let queued = Task { try await pool.run { _ in queuedRan.withLock { $0 = true } } }
        queued.cancel()
        await #expect(throws: CancellationError.self) { try await queued.value }
        busy.cancel()
        await #expect(throws: CancellationError.self) { try await busy.value }
        #expect(await eventually { sawAbort.withLock { $0 } })
        // The pool's one thread is free again, and the cancelled job did not run on it.
        #expect(try await pool.run { _ in 7 } == 7)
        #expect(!queuedRan.withLock { $0 })
    }
}

/// A short pause on a pool thread (not a cooperative one).
func usleepish() {
    var t = timespec(tv_sec: 0, tv_nsec: 1_000_000)
    nanosleep(&t, nil)
}

@Suite struct ConcurrentlyTests {
    struct Failed: Error, Equatable { let side: String }

    /// Both halves run, on two threads at once (each waits until it sees the other started), and
    /// both results come back.
    @Test func bothHalvesRunAtOnceAndReturn() throws {
        let started = Mutex<Set<String>>([])
        func meet(_ name: String) -> Bool {
            started.withLock { _ = $0.insert(name) }
            for _ in 0..<5_000 where started.withLock({ $0.count }) < 2 { usleepish() }
            return started.withLock { $0.count } == 2
        }
        let (side, main) = try concurrently({ meet("side") }, { meet("main") })
        #expect(side && main)
    }

    /// An error of either half is thrown once both have ended; the main half's first.
    @Test func errorsComeBackAfterBothEnded() {
        let sideEnded = Mutex(false)
        #expect(throws: Failed(side: "side")) {
            _ = try concurrently({ () throws -> Int in
                usleepish()
                sideEnded.withLock { $0 = true }
                throw Failed(side: "side")
            }, { 1 })
        }
        #expect(sideEnded.withLock { $0 })
        #expect(throws: Failed(side: "main")) {
            _ = try concurrently({ () throws -> Int in throw Failed(side: "side") }, { () throws -> Int in throw Failed(side: "main") })
        }
    }

    /// A handoff keeps the order, never lets the producer more than its capacity ahead, and a
    /// consumer that closes it early frees the producer.
    @Test func aHandoffIsOrderedBoundedAndClosable() throws {
        let handoff = Handoff<Int>(capacity: 3)
        let ahead = Mutex(0)
        let (_, taken) = try concurrently({
            defer { handoff.close() }
            for i in 0..<200 {
                guard handoff.put(i) else { return }
                ahead.withLock { $0 += 1 }
            }
        }, { () -> [Int] in
            var taken: [Int] = []
            var most = 0
            while let i = handoff.take() {
                most = max(most, ahead.withLock { $0 } - taken.count)
                taken.append(i)
                if taken.count % 50 == 0 { usleepish() }
            }
            #expect(most <= 4)  // 3 waiting, and one counted just before it was taken
            return taken
        })
        #expect(taken == Array(0..<200))

        let early = Handoff<Int>(capacity: 2)
        let put = Mutex(0)
        let (_, first) = try concurrently({
            for i in 0..<1_000 {
                guard early.put(i) else { return }
                put.withLock { $0 += 1 }
            }
        }, { () -> Int? in
            defer { early.close() }
            return early.take()
        })
        #expect(first == 0)
        #expect(put.withLock { $0 } < 1_000)
    }
}

