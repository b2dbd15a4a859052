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

/// A pool of `helpers` sandboxed helpers (the attache-decode built beside these tests). Started
/// on threads of these tests' own: the pool's start waits for its first helper to say it is
/// ready, and two dozen such waits at once on the test runner's cooperative threads (one per
/// core) stalled every other suite for seconds; on BlockingPool.shared they queued in front of
/// the in-process decodes of other suites' enrichments, which then missed their deadlines.
func makePool(helpers: Int = 1, metrics: TestMetrics = TestMetrics(),
              _ tweak: (inout DecoderPool.Configuration) -> Void = { _ in }) async throws -> DecoderPool {
    var configuration = DecoderPool.Configuration(helpers: helpers)
    tweak(&configuration)
    let ready = configuration
    return try await poolStarts.run { _ in try DecoderPool(configuration: ready, metrics: metrics) }
}

private let poolStarts = BlockingPool(threads: 2, name: "test-pool-start")

/// The tests' helper (AttacheDecoderProbe, built beside these tests): attache-decode with a job
/// that makes a forbidden call inside the sandbox.
let probeHelper = pathBesideThisExecutable("AttacheDecoderProbe") ?? "AttacheDecoderProbe"

/// What a test job that makes a forbidden call answers (or how it ends).
func tryCall(_ pool: DecoderPool, _ call: String) async throws -> WireFrame {
    try await pool.run(WireFrame(JSONObject(["op": .string("test"), "call": .string(call)])))
}

/// Reads a /proc file of a process (empty when it cannot be read).
func procFile(_ pid: pid_t, _ name: String) -> String {
    String(decoding: (try? readFile("/proc/\(pid)/\(name)")) ?? [], as: UTF8.self)
}

@Suite struct DecoderPoolTests {
    let limits = MediaLimits()
    let options = RenderOptions()

    /// The converted formats too: libde265 (HEIC) decodes on threads of its own, which the filter
    /// allows (threads only, never processes).
    @Test(arguments: ["photo.jpg", "progressive.jpg", "rotated.jpg", "alpha.png", "palette.png", "animated.gif",
                      "photo.heic", "alpha.heic", "photo.avif", "rotated.avif", "photo.webp", "photo.jxl", "movie.webp", "animated.avif"])
    func imagesComeOutAsInProcess(_ name: String) async throws {
        let pool = try await makePool()
        defer { pool.shutdown() }
        let bytes = Fixtures.bytes(name)
        let isolated = try await pool.image(bytes, format: nil, options: options, limits: limits).rendition
        let local = try await InProcessDecoder().image(bytes, format: nil, options: options, limits: limits).rendition
        #expect(isolated.header == local.header)
        #expect(isolated.thumbnail.bytes == local.thumbnail.bytes)
        #expect(isolated.display?.bytes == local.display?.bytes)
        #expect(isolated.display?.frames == local.display?.frames)
        #expect(isolated.thumbhash == local.thumbhash)
        #expect((isolated.thumbnail.width, isolated.thumbnail.height) == (local.thumbnail.width, local.thumbnail.height))
    }

    /// An animation's movie and its GIF copy come back from a helper as they are made here.
    @Test func anAnimationsMovieAndGIFCopyComeBack() async throws {
        let pool = try await makePool()
        defer { pool.shutdown() }
        let bytes = Fixtures.bytes("animated.avif")
        let options = RenderOptions(transcode: TranscodeSettings())
        let isolated = try await pool.image(bytes, format: nil, options: options, limits: limits).rendition
        let local = try await InProcessDecoder().image(bytes, format: nil, options: options, limits: limits).rendition
        #expect(isolated.display?.format == .mp4 && isolated.display?.frames == local.display?.frames)
        #expect(isolated.gif?.format == .gif)
        #expect(isolated.gif?.bytes == local.gif?.bytes)
    }

    /// A download that spilled to disk goes to a helper as a read-only descriptor that it maps:
    /// the same renditions as its bytes, for an image, a movie and a probe, and the descriptor
    /// is gone once the job is done.
    @Test func aFileIsHandedOverByItsDescriptor() async throws {
        let pool = try await makePool()
        defer { pool.shutdown() }
        let directory = try makeTempDirectory()
        defer { unlink(directory + "/photo"); unlink(directory + "/clip"); rmdir(directory) }
        try writeFileAtomically(directory + "/photo", Fixtures.bytes("progressive.jpg"))
        try writeFileAtomically(directory + "/clip", Fixtures.bytes("clip.mp4"))
        let photo = MappedBytes.file(try InputFile(directory + "/photo"))
        let isolated = try await pool.image(photo, format: nil, options: options, limits: limits).rendition
        let local = try await InProcessDecoder().image(Fixtures.bytes("progressive.jpg"), format: nil, options: options, limits: limits).rendition
        #expect(isolated.thumbnail.bytes == local.thumbnail.bytes)
        #expect(isolated.display?.bytes == local.display?.bytes)
        let clip = MappedBytes.file(try InputFile(directory + "/clip"))
        let movie = try await pool.movie(clip, format: nil, options: options, time: 0.5, posterMode: .exact, limits: limits)
        let localMovie = try await InProcessDecoder().movie(Fixtures.bytes("clip.mp4"), format: nil, options: options, time: 0.5,
                                                            posterMode: .exact, limits: limits)
        #expect(movie.thumbnail?.bytes == localMovie.thumbnail?.bytes)
        #expect(try await pool.probe(clip, limits: limits) == localMovie.facts)
        let pid = try #require(pool.helperPIDs.first)
        #expect(listDirectory("/proc/\(pid)/fd").sorted() == ["0", "1", "2"])
        #expect(pool.crashes == 0)
    }

    @Test func moviesAndProbesComeOutAsInProcess() async throws {
        let pool = try await makePool()
        defer { pool.shutdown() }
        for name in ["clip.mp4", "portrait.mp4", "hevc.mp4"] {
            let bytes = Fixtures.bytes(name)
            var clipped = options
            clipped.clip = .init(x: 0.25, y: 0, width: 0.5, height: 1)
            let isolated = try await pool.movie(bytes, format: nil, options: clipped, time: 0.5, posterMode: .exact, limits: limits)
            let local = try await InProcessDecoder().movie(bytes, format: nil, options: clipped, time: 0.5, posterMode: .exact, limits: limits)
            #expect(isolated.facts == local.facts, "\(name)")
            #expect(isolated.thumbnail?.bytes == local.thumbnail?.bytes, "\(name)")
            #expect(isolated.thumbnailTime == local.thumbnailTime, "\(name)")
        }
        let sound = try await pool.probe(Fixtures.bytes("sound.m4a"), limits: limits)
        #expect(sound == (try await InProcessDecoder().probe(Fixtures.bytes("sound.m4a"), limits: limits)))
        #expect(sound.kind == .audio)
    }

    /// Conversions run in the sandboxed helper (threads, the encoders' allocations, the muxer's
    /// second pass in memory) and come back as they do in process.
    @Test func conversionsComeOutAsInProcess() async throws {
        let pool = try await makePool()
        defer { pool.shutdown() }
        var converting = options
        converting.transcode = TranscodeSettings()
        for (name, method) in [("clip-vp9.webm", ConvertedMovie.Method.transcode), ("clip-hevc.mkv", .remux), ("voice.opus", .transcode)] {
            let isolated = try await pool.movie(Fixtures.bytes(name), format: nil, options: converting, time: nil, posterMode: .fast, limits: limits)
            let converted = try #require(isolated.converted, "\(name)")
            #expect(converted.method == method, "\(name)")
            let facts = try VideoPipeline().probe(converted.bytes)
            #expect(facts.isSupported, "\(name)")
            #expect(abs(facts.duration - isolated.facts.duration) < 0.15, "\(name)")
        }
    }

    @Test func mediaErrorsComeBackAsTheyWereAndCostNoHelper() async throws {
        let pool = try await makePool()
        defer { pool.shutdown() }
        let truncated = await #expect(throws: MediaError.self) {
            try await pool.image(Fixtures.bytes("truncated.jpg"), format: nil, options: options, limits: limits)
        }
        #expect(truncated?.code == .invalidMedia)
        #expect(truncated?.detail == nil)
        let bomb = await #expect(throws: MediaError.self) {
            try await pool.image(Fixtures.pngHeader(width: 100_000, height: 100_000), format: nil, options: options, limits: limits)
        }
        #expect(bomb?.code == .limitsExceeded)
        let notMovie = await #expect(throws: MediaError.self) {
            try await pool.probe(Fixtures.bytes("photo.jpg"), limits: limits)
        }
        #expect(notMovie?.code == .unsupportedType)
        #expect(pool.crashes == 0)
        #expect(pool.helpersStarted == 1)
    }

    @Test func helpersHoldNothingOfTheService() async throws {
        // A descriptor of ours without close-on-exec: the helper must not get it.
        let leaky = open("/dev/null", O_RDONLY)
        defer { close(leaky) }
        let pool = try await makePool()
        defer { pool.shutdown() }
        let pid = try #require(pool.helperPIDs.first)
        #expect(listDirectory("/proc/\(pid)/fd").sorted() == ["0", "1", "2"])
        #expect(procFile(pid, "environ").isEmpty)  // no store credentials, no proxy settings
        let status = procFile(pid, "status")
        #expect(status.contains("Pid:\t\(pid)"))  // read at all
        #expect(status.contains("NoNewPrivs:\t1"))
        #expect(status.contains("Seccomp:\t2"))  // a filter
        let limits = procFile(pid, "limits")
        for limit in ["Max core file size", "Max file size"] {
            #expect(limits.split(separator: "\n").contains { $0.hasPrefix(limit) && $0.contains(" 0 ") }, "\(limit)")
        }
        // Its three, and room for the one a job's file arrives as.
        #expect(limits.split(separator: "\n").contains { $0.hasPrefix("Max open files") && $0.contains(" 4 ") })
        #expect(limits.split(separator: "\n").contains { $0.hasPrefix("Max address space") && !$0.contains("unlimited") })
        #expect(limits.split(separator: "\n").contains { $0.hasPrefix("Max cpu time") && !$0.contains("unlimited") })
    }

    @Test(arguments: ["socket", "connect", "execve", "fork"])
    func aForbiddenCallKillsTheHelper(_ call: String) async throws {
        let metrics = TestMetrics()
        let pool = try await makePool(metrics: metrics) { $0.helperPath = probeHelper }
        defer { pool.shutdown() }
        let error = await #expect(throws: MediaError.self) { try await tryCall(pool, call) }
        #expect(error?.code == .invalidMedia)
        #expect(error?.detail == .decoderCrashed)
        #expect(error?.message.contains("SIGSYS") == true, "\(error?.message ?? "")")
        #expect(pool.crashes == 1)
        #expect(try metrics.expectCounter("attache_decoder_crashes_total", [("cause", "forbidden-call")]).totalValue == 1)
        #expect(try metrics.expectCounter("attache_decoder_crashes_total", [("cause", "crash")]).totalValue == 0)
        // Replaced: the next job is done by a fresh helper.
        let next = try await pool.image(Fixtures.bytes("photo.jpg"), format: nil, options: options, limits: limits)
        #expect(next.rendition.thumbnail.width == 320)
        #expect(pool.helpersStarted == 2)
    }

    @Test func openingAFileIsRefusedNotFatal() async throws {
        let pool = try await makePool { $0.helperPath = probeHelper }
        defer { pool.shutdown() }
        let answer = try await tryCall(pool, "open")
        #expect(answer.header["message"]?.stringValue == "open returned -1, errno \(EACCES)")
        #expect(pool.crashes == 0)
    }

    @Test func theShippedHelperHasNoTestJob() async throws {
        // What a service starts: a test job is not a job it knows, and the helper says so.
        let pool = try await makePool()
        defer { pool.shutdown() }
        let answer = try await tryCall(pool, "socket")
        #expect(answer.header["ok"] == .bool(false))
        #expect(answer.header["message"]?.stringValue?.contains("returned") == false)
        #expect(pool.crashes == 0)
    }

    @Test func aHelperKilledMidJobCostsThatJob() async throws {
        let metrics = TestMetrics()
        let pool = try await makePool(metrics: metrics) { $0.helperPath = probeHelper }
        defer { pool.shutdown() }
        let pid = try #require(pool.helperPIDs.first)
        let job = Task { try await tryCall(pool, "spin") }
        defer { job.cancel() }
        #expect(await eventually { pool.busyPIDs == [pid] })  // the job was sent to it
        kill(pid, SIGSEGV)
        let error = await #expect(throws: MediaError.self) { try await job.value }
        #expect(error?.detail == .decoderCrashed)
        #expect(error?.message.contains("SIGSEGV") == true, "\(error?.message ?? "")")
        #expect(pool.crashes == 1)
        #expect(try metrics.expectCounter("attache_decoder_crashes_total", [("cause", "crash")]).totalValue == 1)
        let next = try await pool.image(Fixtures.bytes("alpha.png"), format: nil, options: options, limits: limits)
        #expect(next.rendition.thumbnail.format == .png)
        #expect(pool.helperPIDs.first != pid)
    }

    @Test func aHelperKilledWhileIdleCostsNoJob() async throws {
        let pool = try await makePool()
        defer { pool.shutdown() }
        let pid = try #require(pool.helperPIDs.first)
        kill(pid, SIGKILL)
        #expect(await eventually { procFile(pid, "stat").contains(") Z ") })  // dead, not yet collected
        let next = try await pool.image(Fixtures.bytes("photo.jpg"), format: nil, options: options, limits: limits)
        #expect(next.rendition.thumbnail.width == 320)
        #expect(pool.crashes == 0)
        #expect(pool.helperPIDs.first != pid)
    }

    @Test func theAddressSpaceLimitRefusesABigDecode() async throws {
        // A 4000x4000 GIF whose one frame does not cover the screen: the decoder composites onto a
        // 64 MB canvas, over a helper allowed 32 MB on top of its libraries.
        let pool = try await makePool { $0.addressSpace = 32 << 20 }
        defer { pool.shutdown() }
        let big = Fixtures.gif(width: 4000, height: 4000, frames: 1)
        let error = await #expect(throws: MediaError.self) {
            try await pool.image(big, format: nil, options: options, limits: limits)
        }
        #expect(error?.code == .limitsExceeded, "\(String(describing: error))")
        #expect(pool.crashes == 0)
        // In this process, the same file decodes: it was the limit.
        _ = try await InProcessDecoder().image(big, format: nil, options: options, limits: limits)
    }

    @Test func workedHelpersAreReplaced() async throws {
        let pool = try await makePool { $0.jobsPerHelper = 2 }
        defer { pool.shutdown() }
        for _ in 0..<5 {
            _ = try await pool.image(Fixtures.bytes("photo.jpg"), format: nil, options: options, limits: limits)
        }
        #expect(pool.helpersStarted >= 3)
        #expect(pool.crashes == 0)
    }

    @Test func aHelperThatCannotStartIsAnErrorAtStart() async throws {
        let missing = await #expect(throws: IsolationError.self) {
            try await makePool { $0.helperPath = "/nonexistent/attache-decode" }
        }
        #expect(missing?.code == .cannotStart)
        // Not a helper: it never says it is ready.
        let error = await #expect(throws: IsolationError.self) {
            try await makePool { $0.helperPath = "/bin/true" }
        }
        #expect(error?.code == .notReady)
        #expect(error?.description.contains("attache-decode") == true)
    }
}
