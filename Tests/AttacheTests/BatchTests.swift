import Attache
import AttacheBatch
import AttacheEnrichment
import AttacheFetch
import AttacheOrigin
import AttacheTesting
import Logging
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite struct BatchTests {
    /// 20 distinct image URLs (the same small PNG under 20 names).
    static func origin() throws -> Origin {
        let png = Fixtures.bytes("alpha.png")
        var files: [String: [UInt8]] = [:]
        for i in 0..<20 { files["/img/\(i).png"] = png }
        return try Origin(root: Fixtures.mediaDirectory, files: files)
    }

    static func enrichment(_ media: String, cache: Bool = true) throws -> Enrichment {
        var options = Enrichment.Configuration()
        options.storage.directory = media
        options.fetch.policy.allowed = [CIDR("127.0.0.1/32")!]
        options.runtime.deadlinePolicy.default = Fixtures.generousDeadline  // the subject is batching, not time: room for a loaded machine
        options.cache = cache ? MediaCache.Configuration() : nil
        return try Enrichment(configuration: options, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    /// `count` payloads over the 20 URLs, with a line that is not a payload at `badLine` (1-based).
    static func input(port: Int, count: Int, badLine: Int? = nil) -> [UInt8] {
        var lines: [String] = []
        for i in 0..<count {
            if lines.count + 1 == badLine { lines.append("this is not json") }
            lines.append(#"{"aps":{"alert":"n\#(i)","mutable-content":1},"media-url":"http://127.0.0.1:\#(port)/img/\#(i % 20).png","n":\#(i)}"#)
        }
        return Array((lines.joined(separator: "\n") + "\n").utf8)
    }

    func run(_ input: String, _ output: String, media: String, resume: Bool = false, shard: (Int, Int)? = nil) async throws -> BatchProgress {
        let enrichment = try Self.enrichment(media)
        defer { enrichment.shutdown() }
        let configuration = BatchRunner.Configuration(input: .jsonLines(input), output: output, concurrency: 16, resume: resume, shard: shard)
        return try await BatchRunner(configuration: configuration, enrichment: enrichment).run()
    }

    @Test func aThousandPayloadsOverTwentyURLsFetchTwentyTimes() async throws {
        let origin = try Self.origin()
        defer { origin.stop() }
        let dir = try makeTempDirectory()
        try writeBytes("\(dir)/in.jsonl", Self.input(port: origin.port, count: 1000))
        let progress = try await run("\(dir)/in.jsonl", "\(dir)/out.jsonl", media: "\(dir)/media")
        #expect(progress.done == 1000)
        #expect(progress.outcomes["enriched"] == 1000)
        #expect(origin.statistics.requests == 20)
        let out = try lines("\(dir)/out.jsonl")
        #expect(out.count == 1000)
        // Group commits: outputs synced once per many ledger lines (every 512 or every second),
        // not once per payload; every line reaches the ledger by the end.
        #expect(progress.commits >= 2 && progress.commits < 200)
        #expect(try lines("\(dir)/out.jsonl.report.jsonl").count == 1000)
        // In input order: the n-th output line is the n-th payload.
        #expect(out.enumerated().allSatisfy { i, line in line.contains("\"n\":\(i)}") || line.contains("\"n\":\(i),") })
    }

    /// Batch runs conversions to completion: payloads whose movie is still being converted at
    /// their deadline wait for it, and go out with the movie — one download and one conversion
    /// for all of them.
    @Test func payloadsWaitForTheirConversions() async throws {
        let origin = try Self.origin()
        defer { origin.stop() }
        let dir = try makeTempDirectory()
        var payloads = (0..<3).map { i in #"{"aps":{"alert":"c\#(i)","mutable-content":1},"media-url":"http://127.0.0.1:\#(origin.port)/clip-vp9.webm"}"# }
        payloads.append(#"{"aps":{"alert":"i","mutable-content":1},"media-url":"http://127.0.0.1:\#(origin.port)/img/0.png"}"#)
        try writeBytes("\(dir)/in.jsonl", Array((payloads.joined(separator: "\n") + "\n").utf8))
        let decoder = HeldConversions()
        let enrichment = try PosterFirstTests.waitingEnrichment(decoder, deadline: PosterFirstTests.posterBudget)
        defer { enrichment.shutdown() }
        // Released once every payload's deadline has passed.
        let release = Task {
            try await Task.sleep(for: PosterFirstTests.posterBudget + .seconds(1))
            decoder.release()
        }
        defer { release.cancel() }
        let configuration = BatchRunner.Configuration(input: .jsonLines("\(dir)/in.jsonl"), output: "\(dir)/out.jsonl", concurrency: 4)
        let progress = try await BatchRunner(configuration: configuration, enrichment: enrichment).run()
        #expect(progress.outcomes["enriched"] == 4)
        let out = try lines("\(dir)/out.jsonl")
        #expect(out.count == 4)
        #expect(out.prefix(3).allSatisfy { $0.contains("public.mpeg-4") && !$0.contains("public.jpeg") })
        #expect(origin.statistics.requestsByPath["/clip-vp9.webm"] == 1)
        #expect(decoder.conversions.withLock { $0 } == 1)
    }

    @Test func aRejectedLineIsReportedWithItsNumberAndTheBatchGoesOn() async throws {
        let origin = try Self.origin()
        defer { origin.stop() }
        let dir = try makeTempDirectory()
        try writeBytes("\(dir)/in.jsonl", Self.input(port: origin.port, count: 30, badLine: 7))
        let progress = try await run("\(dir)/in.jsonl", "\(dir)/out.jsonl", media: "\(dir)/media")
        #expect(progress.outcomes["rejected"] == 1)
        #expect(try lines("\(dir)/out.jsonl").count == 30)
        #expect(try lines("\(dir)/out.jsonl.rejects.jsonl") == ["this is not json"])
        let report = try lines("\(dir)/out.jsonl.report.jsonl")
        #expect(report.count == 31)
        #expect(report[6].hasPrefix(#"{"line":7,"#))
        #expect(report[6].contains(#""outcome":"rejected""#))
    }

    @Test func resumingAfterACrashGivesTheSameOutputByteForByte() async throws {
        let origin = try Self.origin()
        defer { origin.stop() }
        let dir = try makeTempDirectory()
        try writeBytes("\(dir)/in.jsonl", Self.input(port: origin.port, count: 200, badLine: 50))
        _ = try await run("\(dir)/in.jsonl", "\(dir)/whole.jsonl", media: "\(dir)/media")

        // What a run killed halfway leaves: the first 100 ledger lines, an output one payload ahead
        // of its ledger, and a torn last line in each.
        let report = try lines("\(dir)/whole.jsonl.report.jsonl")
        let output = try lines("\(dir)/whole.jsonl")
        try writeBytes("\(dir)/cut.jsonl.report.jsonl", Array((report.prefix(100).joined(separator: "\n") + "\n{\"line\":10").utf8))
        try writeBytes("\(dir)/cut.jsonl", Array((output.prefix(100).joined(separator: "\n") + "\n{\"aps\":{\"al").utf8))
        try writeBytes("\(dir)/cut.jsonl.rejects.jsonl", Array("this is not json\n".utf8))
        let progress = try await run("\(dir)/in.jsonl", "\(dir)/cut.jsonl", media: "\(dir)/media", resume: true)
        #expect(progress.resumed == 100)
        #expect(try readBytes("\(dir)/cut.jsonl") == readBytes("\(dir)/whole.jsonl"))
        #expect(try lines("\(dir)/cut.jsonl.rejects.jsonl") == ["this is not json"])
        // Ledger lines differ only in timings; their line numbers and outcomes match.
        let resumed = try lines("\(dir)/cut.jsonl.report.jsonl").map { $0.prefix(while: { $0 != "e" }) }
        #expect(resumed == report.map { $0.prefix(while: { $0 != "e" }) })
    }

    /// The first ledger entry records the input; resuming against another file, the same path
    /// with other contents, or another shard is refused and leaves every file as it was. A ledger
    /// from before the input was recorded still resumes.
    @Test func resumingAgainstAnotherInputIsRefused() async throws {
        let origin = try Self.origin()
        defer { origin.stop() }
        let dir = try makeTempDirectory()
        try writeBytes("\(dir)/in.jsonl", Self.input(port: origin.port, count: 30))
        try writeBytes("\(dir)/other.jsonl", Self.input(port: origin.port, count: 31))
        _ = try await run("\(dir)/in.jsonl", "\(dir)/out.jsonl", media: "\(dir)/media")
        let report = try lines("\(dir)/out.jsonl.report.jsonl")
        #expect(report[0].contains(#""input":{"path":"\#(dir)/in.jsonl","size":"#))
        #expect(!report[1].contains(#""input""#))
        let kept = try (readBytes("\(dir)/out.jsonl"), readBytes("\(dir)/out.jsonl.report.jsonl"))
        func expectRefused(_ input: String, shard: (Int, Int)? = nil, _ why: String) async throws {
            await #expect { try await run(input, "\(dir)/out.jsonl", media: "\(dir)/media", resume: true, shard: shard) } throws: {
                ($0 as? BatchError)?.code == .foreignLedger && "\($0)".contains("ledger of another input") && "\($0)".contains(why)
            }
            let now = try (readBytes("\(dir)/out.jsonl"), readBytes("\(dir)/out.jsonl.report.jsonl"))
            #expect(now == kept)
        }
        try await expectRefused("\(dir)/other.jsonl", "path")
        try await expectRefused("\(dir)/in.jsonl", shard: (0, 2), "shard")
        // Same path and size, other bytes.
        var changed = try readBytes("\(dir)/in.jsonl")
        changed[changed.count - 3] = UInt8(ascii: "8")
        try writeBytes("\(dir)/in.jsonl", changed)
        try await expectRefused("\(dir)/in.jsonl", "first 64 KiB")

        // A ledger without the input (as written before it was recorded) resumes.
        try writeBytes("\(dir)/in.jsonl", Self.input(port: origin.port, count: 30))
        let old = report.prefix(10).map { $0.replacing(#/,"input":\{[^}]*\}/#, with: "") }
        #expect(!old[0].contains("input"))
        try writeBytes("\(dir)/out.jsonl.report.jsonl", Array((old.joined(separator: "\n") + "\n").utf8))
        let progress = try await run("\(dir)/in.jsonl", "\(dir)/out.jsonl", media: "\(dir)/media", resume: true)
        #expect(progress.resumed == 10 && progress.done == 30)
    }

    @Test func shardOutputsTogetherEqualTheWhole() async throws {
        let origin = try Self.origin()
        defer { origin.stop() }
        let dir = try makeTempDirectory()
        try writeBytes("\(dir)/in.jsonl", Self.input(port: origin.port, count: 90, badLine: 11))
        _ = try await run("\(dir)/in.jsonl", "\(dir)/whole.jsonl", media: "\(dir)/media")
        var union: [String] = []
        for i in 0..<3 {
            _ = try await run("\(dir)/in.jsonl", "\(dir)/shard\(i).jsonl", media: "\(dir)/media", shard: (i, 3))
            union += try lines("\(dir)/shard\(i).jsonl")
        }
        #expect(union.sorted() == (try lines("\(dir)/whole.jsonl")).sorted())
        #expect(union.count == 90)
    }

    @Test func directoriesInAndOut() async throws {
        let origin = try Self.origin()
        defer { origin.stop() }
        let dir = try makeTempDirectory()
        try makeDirectory("\(dir)/in")
        try writeBytes("\(dir)/in/b.json", Array("{\n  \"aps\": {\"alert\": \"x\"}\n}\n".utf8))
        try writeBytes("\(dir)/in/a.apns", Array(#"{"aps":{"alert":"y","mutable-content":1},"media-url":"http://127.0.0.1:\#(origin.port)/img/1.png"}"#.utf8))
        try writeBytes("\(dir)/in/ignored.txt", Array("x".utf8))
        let enrichment = try Self.enrichment("\(dir)/media")
        defer { enrichment.shutdown() }
        let configuration = BatchRunner.Configuration(input: .directory("\(dir)/in"), output: "\(dir)/out", outputIsDirectory: true)
        let progress = try await BatchRunner(configuration: configuration, enrichment: enrichment).run()
        #expect(progress.done == 2)
        #expect(try readBytes("\(dir)/out/b.json") == readBytes("\(dir)/in/b.json"))  // passthrough, byte for byte
        #expect(String(decoding: try readBytes("\(dir)/out/a.apns"), as: UTF8.self).contains("\"attachments\""))
        #expect(listDirectory("\(dir)/out").contains("report.jsonl"))
    }

    /// A directory (or a link to one) named like a payload is reported and skipped.
    @Test func aDirectoryNamedLikeAPayloadIsReportedAndSkipped() async throws {
        let dir = try makeTempDirectory()
        try makeDirectory("\(dir)/in")
        try makeDirectory("\(dir)/in/b.json")
        #expect(symlink("\(dir)/in/b.json", "\(dir)/in/c.json") == 0)
        try writeBytes("\(dir)/in/a.json", Array(#"{"aps":{"alert":"x"}}"#.utf8))
        try writeBytes("\(dir)/in/d.json", Array(#"{"aps":{"alert":"z"}}"#.utf8))
        let enrichment = try Self.enrichment("\(dir)/media")
        defer { enrichment.shutdown() }
        let configuration = BatchRunner.Configuration(input: .directory("\(dir)/in"), output: "\(dir)/out", outputIsDirectory: true)
        let progress = try await BatchRunner(configuration: configuration, enrichment: enrichment).run()
        #expect(progress.done == 4)
        #expect(try readBytes("\(dir)/out/a.json") == readBytes("\(dir)/in/a.json"))
        #expect(try readBytes("\(dir)/out/d.json") == readBytes("\(dir)/in/d.json"))
        let report = try lines("\(dir)/out/report.jsonl")
        #expect(report.filter { $0.contains(#""outcome":"rejected""#) }.count == 2)
    }
}

func writeBytes(_ path: String, _ bytes: [UInt8]) throws {
    guard let file = fopen(path, "wb") else { throw SetupError("cannot write \(path)") }
    defer { fclose(file) }
    _ = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
}

func readBytes(_ path: String) throws -> [UInt8] {
    Fixtures.bytes(String(path.split(separator: "/").last!), in: "/" + path.split(separator: "/").dropLast().joined(separator: "/"))
}

func lines(_ path: String) throws -> [String] {
    String(decoding: try readBytes(path), as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
}

func makeDirectory(_ path: String) throws {
    guard mkdir(path, 0o755) == 0 else { throw SetupError("mkdir \(path)") }
}
