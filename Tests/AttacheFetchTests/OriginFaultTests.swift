import AttacheTesting
import Testing
@testable import AttacheFetch
import AttacheOrigin

/// Each fault of the origin behaves as `OriginFault` documents (seen through the fetch engine).
@Suite struct OriginFaultTests: FetchEngineTesting {
    let origin: Origin

    init() throws {
        origin = try Self.makeOrigin()
    }

    @Test func delayHoldsTheHeaders() async throws {
        let engine = try engine()
        defer { engine.shutdown(); origin.stop() }
        let result = try await fetch(engine, origin.url("/small.bin?delay=300")).get()
        #expect(result.timings.firstByte >= 290)
    }

    @Test func statusAndTypeAreWhatWasAskedFor() async throws {
        let engine = try engine()
        defer { engine.shutdown(); origin.stop() }
        guard case .failure(let error) = await fetch(engine, origin.url("/small.bin?status=503")) else {
            Issue.record("503 succeeded")
            return
        }
        #expect(error.status == 503)
        let typed = try await fetch(engine, origin.url("/small.bin?type=image/jpeg")).get()
        #expect(typed.contentType == "image/jpeg")
        let missing = await fetch(engine, origin.url("/nothing-here"))
        #expect(reason(missing) == "fetch-failed")
    }

    @Test func rateLimitsTheBandwidth() async throws {
        let engine = try engine()
        defer { engine.shutdown(); origin.stop() }
        // 200 KB at 400 KB/s: about half a second.
        let result = try await fetch(engine, origin.url("/media.bin?rate=400000")).get()
        #expect(result.timings.total >= 400)
        #expect(result.bytes == Self.body.count)
    }

    @Test func profilesAddLatencyAndBandwidth() async throws {
        let engine = try engine()
        defer { engine.shutdown(); origin.stop() }
        let result = try await fetch(engine, origin.url("/media.bin?profile=3g")).get()  // 300 ms, 96 KB/s
        #expect(result.timings.firstByte >= 290)
        #expect(result.timings.total >= 1500)
    }

    @Test func stallSendsHeadersThenNothing() async throws {
        let engine = try engine()
        defer { engine.shutdown(); origin.stop() }
        let result = await fetch(engine, origin.url("/media.bin?stall=1"), deadline: .milliseconds(400))
        #expect(reason(result) == "timeout")
        if case .failure(let error) = result { #expect(error.status == 200) }
    }

    @Test func truncateAndResetCutTheBody() async throws {
        let engine = try engine()
        defer { engine.shutdown(); origin.stop() }
        #expect(reason(await fetch(engine, origin.url("/media.bin?truncate=1000"))) == "fetch-failed")
        #expect(reason(await fetch(engine, origin.url("/media.bin?reset=1000"))) == "fetch-failed")
    }

    @Test func lengthLiesAboutTheSize() async throws {
        let engine = try engine()
        defer { engine.shutdown(); origin.stop() }
        #expect(reason(await fetch(engine, origin.url("/small.bin?length=999999999"), maxBytes: 1000)) == "too-large")
    }

    @Test func redirectsAndEncodingAreAsAdvertised() async throws {
        let engine = try engine()
        defer { engine.shutdown(); origin.stop() }
        #expect(try await fetch(engine, origin.url("/small.bin?redirect=3")).get().redirects == 3)
        let moved = try await fetch(engine, origin.url("/small.bin?location=/hello.gz")).get()
        #expect(try moved.body.readAll() == Self.gzipHello)
        #expect(origin.statistics.requestsByPath["/hello.gz"] == 1)
    }

    @Test func endlessNeverEnds() async throws {
        let engine = try engine()
        defer { engine.shutdown(); origin.stop() }
        #expect(reason(await fetch(engine, origin.url("/small.bin?endless=1&rate=1000000"), deadline: .milliseconds(300))) == "timeout")
    }

    @Test func faultsCanBeConfiguredByPath() async throws {
        let configured = try Origin(files: ["/a.bin": [1, 2, 3]], faults: ["/a.bin": ["status": "503"]])
        let engine = try engine()
        defer { engine.shutdown(); configured.stop(); origin.stop() }
        guard case .failure(let error) = await fetch(engine, configured.url("/a.bin")) else {
            Issue.record("the configured fault was not applied")
            return
        }
        #expect(error.status == 503)
        // The request's own query wins over the configuration.
        #expect(try await fetch(engine, configured.url("/a.bin?status=200")).get().bytes == 3)
        #expect(OriginFault.parameters("delay=5&stall=1") == ["delay": "5", "stall": "1"])
    }

    @Test func parsesEveryParameter() {
        let f = OriginFault(query: [
            "delay": "5", "status": "418", "type": "x/y", "rate": "7", "stall": "1", "hang": "1", "truncate": "3",
            "reset": "4", "length": "9", "endless": "1", "redirect": "2", "location": "/z", "encoding": "gzip",
        ])
        #expect(f.delayMs == 5 && f.status == 418 && f.contentType == "x/y" && f.bytesPerSecond == 7)
        #expect(f.stallAt == .bytes(0) && f.hang && f.endless && f.truncateAt == .bytes(3) && f.resetAt == .bytes(4) && f.declaredLength == 9)
        #expect(f.redirects == 2 && f.location == "/z" && f.encoding == "gzip")
        let marks = OriginFault(query: ["stall": "50%", "truncate": "200", "reset": "101%"])
        #expect(marks.stallAt == .percent(50) && marks.stallAt?.offset(in: 1000) == 500)
        #expect(marks.truncateAt?.offset(in: 100) == 100 && marks.resetAt == nil)
        let lte = OriginFault(query: ["profile": "lte"])
        #expect(lte.delayMs == 60 && lte.bytesPerSecond == 1_500 * 1024)
    }
}
