@testable import Attache
import AttacheFetch
import AttacheMedia
import AttacheOrigin
import AttachePayload
import AttacheStore
import AttacheSupport
import AttacheTesting
import Synchronization
import Testing

/// A decoder whose conversions wait until the test lets them go: a conversion that outlasts a
/// deadline, whatever the machine's speed.
final class HeldConversions: MediaDecoder {
    let inner = InProcessDecoder()
    let conversions = Mutex(0)
    let released = Mutex(false)

    func decode(_ job: DecodeJob) async throws -> DecodeResult {
        if case .movie(_, _, let options, _, _, _) = job, options.transcode != nil, options.convertsNow {
            conversions.withLock { $0 += 1 }
            while !released.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(20)) }
        }
        return try await inner.decode(job)
    }
}

/// A movie that must be converted, and whose conversion outlasts the payload's deadline: the
/// payload gets the movie's poster in time; the conversion goes on as the cache's work; the next
/// payload for the URL gets the movie.
@Suite struct PosterFirstTests {
    @Test func thePosterIsAttachedInTimeAndTheMovieNextTime() async throws {
        let origin = try Origin(configuration: .init(root: Fixtures.mediaDirectory))
        defer { origin.stop() }
        let directory = try makeTempDirectory()
        let engine = try FetchEngine(configuration: .init(policy: AddressPolicy(allowed: [CIDR("127.0.0.1/32")!]), tempDirectory: directory))
        defer { engine.shutdown() }
        let decoder = HeldConversions()
        let cache = MediaCache(configuration: .init(warmThrough: .seconds(60)))
        let services = MediaServices(engine: engine, store: try FileStore(directory: directory),
                                     configuration: .init(render: RenderOptions(transcode: TranscodeSettings())),
                                     cache: cache, decoder: decoder)
        // Time enough for the poster on a busy machine; the conversion waits for the test anyway.
        let runtime = ExtensionRuntime(configuration: .init(deadline: .seconds(5)))
        let payload = Array(#"{"aps":{"alert":"clip","mutable-content":1},"media-url":"http://127.0.0.1:\#(origin.port)/clip-vp9.webm"}"#.utf8)
        func attachment(_ emission: Emission) throws -> JSONObject {
            try #require(try Payload(bytes: emission.bytes).root["attachments"]?.arrayValue?.first?.objectValue)
        }

        // Two payloads at once: one does the work, the other waits for it; both get the poster.
        async let a = runtime.process(payload) { services.makeExtension() }
        async let b = runtime.process(payload) { services.makeExtension() }
        for emission in try await [a, b] {
            #expect(emission.outcome == .enriched, "\(emission.reason.map { "\($0)" } ?? "")")
            #expect(try attachment(emission)["type"]?.stringValue == "public.jpeg")
            #expect(emission.report.attachments.first?.conversion?.objectValue?["pending"] == .bool(true))
        }

        // The conversion ends as the cache's work (within a minute on a loaded machine).
        decoder.released.withLock { $0 = true }
        let end = ContinuousClock.now + .seconds(60)
        while cache.statistics.entries == 0 && ContinuousClock.now < end { try await Task.sleep(for: .milliseconds(100)) }
        let third = try await runtime.process(payload) { services.makeExtension() }
        #expect(third.outcome == .enriched)
        let movie = try attachment(third)
        #expect(movie["type"]?.stringValue == "public.mpeg-4")
        #expect(movie["converted-from"]?.stringValue == "webm")
        #expect(third.report.attachments.first?.cache == "hit")
        #expect(origin.statistics.requestsByPath["/clip-vp9.webm"] == 1)
        #expect(decoder.conversions.withLock { $0 } == 1)  // one conversion for the three
    }
}
