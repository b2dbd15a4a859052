import AttacheHTTPKit
import Attache
import AttacheEnrichment
import AttacheLab
import AttacheOrigin
import AttachePayload
import AttacheSupport
import AttacheTesting
import AttacheTimeline
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import Testing

/// A lab on the repository's samples, its enrichment in this process.
struct LabHarness {
    let lab: Lab

    init(tokens: [String] = [], maxSweepsAtOnce: Int = 2, maxSweepCells: Int = 64, budget: Duration? = nil, maxBudget: Duration? = nil) throws {
        var configuration = LabConfiguration()
        configuration.samples = Fixtures.repositoryRoot + "/Samples"
        configuration.tokens = tokens
        configuration.maxSweepsAtOnce = maxSweepsAtOnce
        configuration.maxSweepCells = maxSweepCells
        var options = Enrichment.Configuration()
        options.isolation = .inProcess
        if let budget { options.runtime.deadlinePolicy.default = budget }
        if let maxBudget { options.runtime.deadlinePolicy.maximum = maxBudget }
        lab = try Lab(configuration: configuration, options: options, publicBase: "http://127.0.0.1:9",
                      logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    var app: some ApplicationProtocol { buildLabApplication(lab: lab, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })) }

    func sample(_ name: String) throws -> String {
        try #require(lab.samples.first { $0.name == name }).text
    }

    /// What the page's own requests say of their body (the lab answers no other POST).
    static let json: HTTPFields = [.contentType: "application/json"]

    static func request(_ fields: KeyValuePairs<String, JSONValue>) -> ByteBuffer {
        ByteBuffer(bytes: JSONWriter.bytes(.object(JSONObject(fields))))
    }
}

/// Server-Sent Events as the page reads them: (event, data) pairs.
func events(_ body: ByteBuffer) throws -> [(event: String, data: JSONObject)] {
    let text = String(buffer: body)
    var out: [(String, JSONObject)] = []
    for block in text.split(separator: "\n\n") {
        var event = "message", data = ""
        for line in block.split(separator: "\n") {
            if line.hasPrefix("event: ") { event = String(line.dropFirst(7)) }
            if line.hasPrefix("data: ") { data += line.dropFirst(6) }
        }
        out.append((event, try #require(try JSONParser(maxBytes: 4 << 20).parse(Array(data.utf8)).objectValue)))
    }
    return out
}

@Suite struct LabTests {
    @Test func aRunStreamsItsStagesThenItsResult() async throws {
        let h = try LabHarness()
        defer { h.lab.shutdown() }
        let payload = try h.sample("fcm-v1.json")
        #expect(payload.contains(h.lab.originURL))
        try await h.app.test(.router) { client in
            let body = LabHarness.request(["payload": .string(payload), "deadline_ms": .int(30_000), "profile": .string("none")])
            try await client.execute(uri: "/api/run", method: .post, headers: LabHarness.json, body: body) { r in
                #expect(r.status == .ok)
                #expect(r.headers[.contentType] == "text/event-stream")
                let all = try events(r.body)
                #expect(all.first?.event == "start")
                #expect(all.last?.event == "result")
                // The attachment's report came as it changed: pending first, each stage later.
                let updates = all.filter { $0.event == "attachment" }
                #expect(updates.count >= 3)
                #expect(updates.first?.data["outcome"]?.stringValue == "pending")
                let stagesSeen = Set(updates.flatMap { $0.data["spans"]?.arrayValue ?? [] }.compactMap { $0.objectValue?["stage"]?.stringValue })
                #expect(stagesSeen.isSuperset(of: ["first_byte", "download", "inspect", "render", "store"]))
                let result = try #require(all.last?.data)
                #expect(result["outcome"]?.stringValue == "enriched")
                #expect(result["payload_bytes"]?.doubleValue ?? 0 <= result["budget_bytes"]?.doubleValue ?? 0)
                let diff = result["diff"]?.arrayValue?.compactMap(\.objectValue) ?? []
                #expect(diff.contains { $0["pointer"]?.stringValue == "/message/apns/payload/attachments" && $0["change"]?.stringValue == "added" })
                let roles = Set(result["images"]?.arrayValue?.compactMap { $0.objectValue?["role"]?.stringValue } ?? [])
                #expect(roles == ["attachment", "thumbnail", "android"])
                #expect(result["images"]?.arrayValue?.allSatisfy { ($0.objectValue?["bytes"]?.doubleValue ?? 0) > 0 } == true)
                #expect(result["text"]?.objectValue?["title"]?.stringValue == "Weekend sale")
                #expect(result["svg"]?.stringValue?.hasPrefix("<svg") == true)
            }
        }
    }

    @Test func theMediaARunMadeIsServed() async throws {
        let h = try LabHarness()
        defer { h.lab.shutdown() }
        let payload = try h.sample("generic.json")
        try await h.app.test(.router) { client in
            let body = LabHarness.request(["payload": .string(payload), "deadline_ms": .int(30_000)])
            let url = try await client.execute(uri: "/api/run", method: .post, headers: LabHarness.json, body: body) { r in
                let result = try #require(try events(r.body).last?.data)
                return try #require(result["images"]?.arrayValue?.first?.objectValue?["url"]?.stringValue)
            }
            let path = String(url.dropFirst("http://127.0.0.1:9".count))
            #expect(path.hasPrefix("/media/"))
            try await client.execute(uri: path, method: .get) { r in
                #expect(r.status == .ok)
                #expect(r.body.readableBytes > 1000)
            }
        }
    }

    @Test func invalidJSONIsPlacedAtItsLineAndColumn() async throws {
        let h = try LabHarness()
        defer { h.lab.shutdown() }
        try await h.app.test(.router) { client in
            let broken = "{\n  \"aps\": {\n    \"alert\": x\n  }\n}"
            for uri in ["/api/check", "/api/run"] {
                try await client.execute(uri: uri, method: .post, headers: LabHarness.json, body: LabHarness.request(["payload": .string(broken)])) { r in
                    #expect(r.status == .badRequest)
                    let error = try #require(try JSONParser().parse(Array(buffer: r.body)).objectValue)
                    #expect(error["line"]?.numberText == "3")
                    #expect(error["column"]?.numberText == "14")
                    #expect(error["error"]?.stringValue?.contains("line 3, column 14") == true)
                }
            }
            try await client.execute(uri: "/api/check", method: .post, headers: LabHarness.json, body: LabHarness.request(["payload": .string("{\"a\":1}")])) { r in
                #expect(r.status == .noContent)
            }
        }
    }

    @Test func aFaultIsPutOnTheSampleMedia() async throws {
        let h = try LabHarness()
        defer { h.lab.shutdown() }
        let prepared = try await h.lab.prepare(try h.sample("generic.json"), profile: try #require(FaultProfile.named("404")))
        #expect(String(decoding: prepared, as: UTF8.self).contains("?status=404"))
        let emission = try await h.lab.run(prepared, budget: .seconds(30))
        #expect(emission.outcome == .fallback)
        #expect(emission.reason == .fetchFailed)
        #expect(emission.bytes == prepared)  // the fallback is the payload as run, byte for byte
        // No fault: the text given is what runs, unchanged.
        let plain = try h.sample("generic.json")
        #expect(try await h.lab.prepare(plain, profile: FaultProfile.all[0]) == Array(plain.utf8))
    }

    @Test func theLabReachesItsOwnOriginAndNoOtherLoopbackPort() async throws {
        let h = try LabHarness()
        defer { h.lab.shutdown() }
        // Another server on loopback (here: a second origin), as a developer's machine has.
        let other = try AttacheOrigin.Origin(root: Fixtures.mediaDirectory)
        defer { other.stop() }
        let url = "http://127.0.0.1:\(other.port)/photo.jpg"
        let payload = "{\"aps\":{\"alert\":\"hi\",\"mutable-content\":1},\"image_url\":\"\(url)\"}"
        let emission = try await h.lab.run(try await h.lab.prepare(payload, profile: FaultProfile.all[0]), budget: .seconds(30))
        #expect(emission.reason == .addressDenied)
        // Nor by asking for a fault, which fetches the URL to serve it from the lab's origin.
        await #expect(throws: LabError.self) { try await h.lab.prepare(payload, profile: try #require(FaultProfile.named("404"))) }
        #expect(other.statistics.requests == 0)
    }

    @Test func aSweepRunsEveryCellAndWritesTheGrid() async throws {
        let h = try LabHarness()
        defer { h.lab.shutdown() }
        let payload = try h.sample("generic.json")
        try await h.app.test(.router) { client in
            let body = LabHarness.request([
                "payload": .string(payload), "deadlines_ms": .array([.int(300), .int(30_000)]),
                "profiles": .array([.string("none"), .string("slow-first-byte")]),
            ])
            try await client.execute(uri: "/api/sweep", method: .post, headers: LabHarness.json, body: body) { r in
                #expect(r.status == .ok)
                let all = try events(r.body)
                let cells = all.filter { $0.event == "cell" }.map(\.data)
                #expect(cells.count == 4)
                func outcome(_ profile: String, _ deadline: Int) -> String? {
                    cells.first { $0["profile"]?.stringValue == profile && $0["deadline_ms"]?.numberText == "\(deadline)" }?["outcome"]?.stringValue
                }
                #expect(outcome("none", 30_000) == "enriched")
                #expect(outcome("slow-first-byte", 300) == "fallback")  // 1.5 s before the first byte
                #expect(outcome("slow-first-byte", 30_000) == "enriched")
                #expect(cells.allSatisfy { $0["attachments"]?.arrayValue?.isEmpty == false })
                let done = try #require(all.last)
                #expect(done.event == "done")
                #expect(done.data["csv"]?.stringValue?.split(separator: "\n").count == 5)
                #expect(done.data["svg"]?.stringValue?.contains("✗ fallback") == true)
            }
        }
    }

    @Test func sweepsAreBounded() async throws {
        let h = try LabHarness(maxSweepsAtOnce: 1, maxSweepCells: 4)
        defer { h.lab.shutdown() }
        let payload = try h.sample("generic.json")
        try await h.app.test(.router) { client in
            let big = LabHarness.request([
                "payload": .string(payload), "deadlines_ms": .array([.int(100), .int(200), .int(300)]),
                "profiles": .array([.string("none"), .string("404")]),
            ])
            try await client.execute(uri: "/api/sweep", method: .post, headers: LabHarness.json, body: big) { r in #expect(r.status == .badRequest) }
            var held: SweepSlot? = try h.lab.sweepSlot()
            let small = LabHarness.request(["payload": .string(payload), "deadlines_ms": .array([.int(100)]), "profiles": .array([.string("none")])])
            try await client.execute(uri: "/api/sweep", method: .post, headers: LabHarness.json, body: small) { r in
                #expect(r.status == .tooManyRequests)
            }
            withExtendedLifetime(held) {}
            held = nil  // given back: the next sweep runs
            try await client.execute(uri: "/api/sweep", method: .post, headers: LabHarness.json, body: small) { r in #expect(r.status == .ok) }
            let tooLong = LabHarness.request(["payload": .string(payload), "deadline_ms": .int(3_600_000)])
            try await client.execute(uri: "/api/run", method: .post, headers: LabHarness.json, body: tooLong) { r in #expect(r.status == .badRequest) }
        }
    }

    /// `--max-deadline` bounds the lab's runs as it bounds the service's requests; the page is told
    /// the bound, and starts at `--deadline`.
    @Test func theDeadlinesAreTheEnrichments() async throws {
        let h = try LabHarness(budget: .milliseconds(1500), maxBudget: .seconds(2))
        defer { h.lab.shutdown() }
        let payload = try h.sample("generic.json")
        try await h.app.test(.router) { client in
            try await client.execute(uri: "/api/setup", method: .get) { r in
                let setup = try #require(try JSONParser().parse(Array(buffer: r.body)).objectValue)
                #expect(setup["limits"]?.objectValue?["max_deadline_ms"]?.numberText == "2000")
                #expect(setup["limits"]?.objectValue?["deadline_ms"]?.numberText == "1500")
            }
            let over = LabHarness.request(["payload": .string(payload), "deadline_ms": .int(2_001), "profile": .string("none")])
            try await client.execute(uri: "/api/run", method: .post, headers: LabHarness.json, body: over) { r in
                #expect(r.status == .badRequest)
                #expect(String(buffer: r.body).contains("between 10 ms and 2000 ms"))
            }
            let within = LabHarness.request(["payload": .string(payload), "deadline_ms": .int(2_000), "profile": .string("none")])
            try await client.execute(uri: "/api/run", method: .post, headers: LabHarness.json, body: within) { r in #expect(r.status == .ok) }
        }
    }

    /// Other sites' pages are kept out: a rebound Host, a foreign Origin, a text/plain POST.
    @Test func otherSitesAreKeptOut() async throws {
        let h = try LabHarness()
        defer { h.lab.shutdown() }
        try await h.app.test(.router) { client in
            let check = LabHarness.request(["payload": .string("{}")])
            try await client.execute(uri: "/api/check", method: .post, headers: [.contentType: "text/plain"], body: check) { r in
                #expect(r.status == .unsupportedMediaType)
            }
            try await client.execute(uri: "/api/check", method: .post, headers: [.contentType: "application/json", .origin: "http://evil.example"],
                                     body: check) { r in #expect(r.status == .forbidden) }
            try await client.execute(uri: "//api/setup", method: .get, headers: [HTTPField.Name("Sec-Fetch-Site")!: "cross-site"]) { r in
                #expect(r.status == .forbidden)
            }
            try await client.execute(uri: "/api/check", method: .post, headers: [.contentType: "application/json; charset=utf-8"], body: check) { r in
                #expect(r.status == .noContent)
            }
        }
    }

    @Test func withATokenTheAPIWantsIt() async throws {
        let h = try LabHarness(tokens: ["s3cret"])
        defer { h.lab.shutdown() }
        try await h.app.test(.router) { client in
            try await client.execute(uri: "/", method: .get) { r in
                #expect(r.status == .ok)  // the page itself asks for the token
                #expect(String(buffer: r.body).contains("Attache lab"))
            }
            try await client.execute(uri: "/api/setup", method: .get) { r in #expect(r.status == .unauthorized) }
            try await client.execute(uri: "/api/setup", method: .get, headers: [.authorization: "Bearer s3cret"]) { r in
                #expect(r.status == .ok)
                let setup = try #require(try JSONParser(maxBytes: 1 << 20).parse(Array(buffer: r.body)).objectValue)
                #expect(setup["samples"]?.arrayValue?.count == (try directoryEntries(Fixtures.payloadDirectory)).filter { $0.hasSuffix(".json") }.count)
                #expect(setup["profiles"]?.arrayValue?.count == FaultProfile.all.count)
            }
        }
    }

    @Test func everyFaultProfileIsOneTheOriginKnows() {
        for profile in FaultProfile.all where !profile.query.isEmpty {
            let parameters = OriginFault.parameters(profile.query)
            #expect(OriginFault(query: parameters) != OriginFault(), "\(profile.name)")
        }
    }

    @Test func diffNamesWhatWasAddedChangedAndRemoved() throws {
        let before = try JSONParser().parse(Array(#"{"aps":{"alert":"a"},"u":"x","gone":1}"#.utf8))
        let after = try JSONParser().parse(Array(#"{"aps":{"alert":"a","new":true},"u":"y","attachments":[]}"#.utf8))
        let diff = PayloadDiff(before: before, after: after).entries.map { "\($0.change.rawValue) \($0.pointer)" }
        #expect(diff == ["added /aps/new", "changed /u", "removed /gone", "added /attachments"])
    }

    @Test func notificationTextComesFromEveryShape() throws {
        func text(_ json: String) throws -> NotificationText { NotificationText(try #require(try JSONParser().parse(Array(json.utf8)).objectValue)) }
        #expect(try text(#"{"aps":{"alert":"Hello"}}"#).body == "Hello")
        #expect(try text(#"{"aps":{"alert":{"title":"T","subtitle":"S","body":"B"}}}"#) .subtitle == "S")
        #expect(try text(#"{"message":{"notification":{"title":"T","body":"B"}}}"#).title == "T")
        #expect(try text(#"{"message":{"apns":{"payload":{"aps":{"alert":{"title":"A"}}}},"notification":{"title":"N","body":"B"}}}"#).title == "A")
    }

    @Test func theGridReadsWithoutColour() {
        let grid = SweepGrid(deadlinesMs: [100, 2000], profiles: ["none", "a,b"], cells: [
            .init(deadlineMs: 100, profile: "none", outcome: .fallback, reason: .timeout, elapsedMs: 99.5, attached: 0, attachments: 1),
            .init(deadlineMs: 2000, profile: "none", outcome: .enriched, reason: nil, elapsedMs: 150, attached: 1, attachments: 1),
        ])
        #expect(grid.csv() == "profile,deadline_ms,outcome,reason,elapsed_ms,attached,attachments\nnone,100,fallback,timeout,99.50,0,1\nnone,2000,enriched,,150.00,1,1\n")
        let svg = grid.svg()
        #expect(svg.contains("✗ fallback") && svg.contains("✓ enriched"))
        #expect(svg.contains(">a,b<"))
    }
}
