import AttacheMedia
import AttachePayload
import AttacheSupport
import AttacheTesting
import MetricsTestKit
import Testing
@testable import AttacheIsolation
#if canImport(Glibc)
import Glibc
#endif

/// A helper stuck in a job never holds an answer: the job ends when its task is cancelled (the
/// payload's deadline), or at the CPU limit. Bounds are the wait + 1 s (run after the other
/// suites, one at a time, as every *Deadline* suite).
@Suite(.serialized) struct DecoderDeadlineTests {
    @Test func aCancelledJobEndsAtOnceAndItsHelperIsReplaced() async throws {
        let pool = try await makePool { $0.helperPath = probeHelper }
        defer { pool.shutdown() }
        let stuck = try #require(pool.helperPIDs.first)
        let job = Task { try await tryCall(pool, "spin") }
        #expect(await eventually { pool.busyPIDs == [stuck] })
        let start = ContinuousClock.now
        job.cancel()
        await #expect(throws: CancellationError.self) { try await job.value }
        let elapsed = start.duration(to: .now)
        #expect(elapsed < .seconds(1), "answered \(elapsed) after the cancellation")
        // The spinning helper was killed, not left to burn a core, and another took its place.
        #expect(await eventually { kill(stuck, 0) != 0 })
        let next = try await pool.image(Fixtures.bytes("photo.jpg"), format: nil, options: RenderOptions(), limits: MediaLimits())
        #expect(next.rendition.thumbnail.width == 320)
        #expect(pool.crashes == 0)
    }

    /// Heavy jobs (movies, big animations) run on all helpers but one: three that never end,
    /// on a pool of three, leave the third helper to the photos queued behind them, which come
    /// back at once; cancelled, the heavy ones give their places back.
    @Test func heavyJobsNeverTakeTheLastHelper() async throws {
        let pool = try await makePool(helpers: 3) { $0.helperPath = probeHelper }
        defer { pool.shutdown() }
        let spin = WireFrame(JSONObject(["op": .string("test"), "call": .string("spin")]))
        let heavy = (0..<3).map { _ in Task { try await pool.run(spin, heavy: true) } }
        #expect(await eventually { pool.busyPIDs.count == 2 })
        let start = ContinuousClock.now
        for _ in 0..<4 {
            let photo = try await pool.image(Fixtures.bytes("photo.jpg"), format: .jpeg, options: RenderOptions(), limits: MediaLimits())
            #expect(photo.rendition.thumbnail.width == 320)
        }
        #expect(start.duration(to: .now) < .seconds(5), "the photos waited for the heavy jobs")
        // (The photos' helper is marked idle just after its answer is handed over.)
        #expect(await eventually { pool.busyPIDs.count == 2 }, "the third heavy job is still queued")
        heavy.forEach { $0.cancel() }
        for job in heavy { await #expect(throws: CancellationError.self) { try await job.value } }
    }

    @Test func aJobOverItsCPUAllowanceIsLimitsExceeded() async throws {
        let metrics = TestMetrics()
        let pool = try await makePool(metrics: metrics) {
            $0.helperPath = probeHelper
            $0.jobCPUSeconds = 1
        }
        defer { pool.shutdown() }
        let start = ContinuousClock.now
        let error = await #expect(throws: MediaError.self) { try await tryCall(pool, "spin") }
        #expect(error?.code == .limitsExceeded)
        #expect(error?.detail == .decoderCPULimit)
        #expect(try metrics.expectCounter("attache_decoder_crashes_total", [("cause", "cpu-limit")]).totalValue == 1)
        // One CPU second, counted from the next whole second used: at most ~2 s of CPU, which a
        // loaded machine may stretch.
        #expect(start.duration(to: .now) < .seconds(10))
    }
}
