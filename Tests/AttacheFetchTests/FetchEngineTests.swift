import AttacheSupport
import AttacheTesting
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import AttacheFetch
import AttacheOrigin

/// Every test talks only to an in-process origin on 127.0.0.1, port 0.
@Suite struct FetchEngineTests: FetchEngineTesting {
    let origin: Origin

    init() throws {
        origin = try Self.makeOrigin()
    }

    @Test func downloadsOverHTTP11WithTimings() async throws {
        let engine = try engine()
        defer { engine.shutdown(); origin.stop() }
        let result = try await fetch(engine, origin.url("/media.bin")).get()
        #expect(result.status == 200)
        #expect(try result.body.readAll() == Self.body)
        #expect(result.bytes == Self.body.count)
        #expect(result.connectedIP == "127.0.0.1")
        #expect(result.timings.total >= result.timings.firstByte)
        #expect(result.redirects == 0)
    }

    @Test func followsARedirectChainOfFive() async throws {
        let engine = try engine()
        defer { engine.shutdown(); origin.stop() }
        let result = try await fetch(engine, origin.url("/small.bin?redirect=5")).get()
        #expect(result.redirects == 5)
        #expect(try result.body.readAll() == [1, 2, 3])
    }

    @Test func stopsASixHopChain() async throws {
        let engine = try engine()
        defer { engine.shutdown(); origin.stop() }
        #expect(reason(await fetch(engine, origin.url("/small.bin?redirect=6"))) == "fetch-failed")
    }

    @Test(arguments: ["2130706433", "0x7f000001", "127.1", "0", "[::ffff:127.0.0.1]", "[::1]"])
    func deniesEveryLoopbackSpelling(_ host: String) async throws {
        let engine = try engine(AddressPolicy())
        defer { engine.shutdown(); origin.stop() }
        let result = await fetch(engine, "http://\(host):\(origin.port)/small.bin")
        #expect(reason(result) == "address-denied")
        #expect(origin.statistics.connections == 0)
    }

    @Test func deniesANameThatResolvesToLoopback() async throws {
        let engine = try engine(AddressPolicy())
        defer { engine.shutdown(); origin.stop() }
        let url = "http://localhost:\(origin.port)/small.bin"
        let result = await fetch(engine, url)
        #expect(reason(result) == "address-denied")
        #expect(origin.statistics.connections == 0)
        // The same name with the address allowed goes through: the denial was about the address.
        let allowed = try self.engine()
        defer { allowed.shutdown() }
        #expect(reason(await fetch(allowed, url)) == "success")
    }

    /// A tenant's hosts: by name, before anything is sent; and on every redirect, so an open
    /// redirect on an allowed host leads nowhere else. (Which names a pattern admits:
    /// `hostPatternsAreCheckedWhenMade`.)
    @Test func onlyTheAllowedHostsAreFetched() async throws {
        let engine = try engine()
        defer { engine.shutdown(); origin.stop() }
        func get(_ host: String, _ path: String = "/small.bin", allowing hosts: [String]) async throws -> String {
            reason(await fetch(engine, "http://\(host):\(origin.port)\(path)", allowedHosts: try HostAllowlist(hosts)))
        }
        #expect(try await get("localhost", allowing: ["localhost"]) == "success")
        #expect(try await get("localhost", allowing: ["cdn.acme.example", "*.acme.example"]) == "host-not-allowed")
        // The address the allowed name stands for is another host.
        #expect(try await get("127.0.0.1", allowing: ["localhost"]) == "host-not-allowed")
        #expect(origin.statistics.requests == 1)  // refused before anything was sent
        #expect(try await get("localhost", "/small.bin?location=http://127.0.0.1:\(origin.port)/small.bin", allowing: ["localhost"]) == "host-not-allowed")
        #expect(origin.statistics.requests == 2)  // the redirect, never its target
    }

    @Test func hostPatternsAreCheckedWhenMade() throws {
        for bad in ["*.com", "a b", "*", "-x.example", "x..example", "*.*.example.com", "http://x.example", ""] {
            #expect(throws: HostAllowlist.Invalid.self, "\(bad)") { try HostAllowlist([bad]) }
        }
        let hosts = try HostAllowlist(["CDN.Example.com.", "*.img.example.com", "203.0.113.7", "[2001:db8::1]"])
        #expect(hosts.allows(host: "cdn.example.com"))
        #expect(hosts.allows(host: "a.b.img.example.com"))
        #expect(!hosts.allows(host: "img.example.com"))
        #expect(!hosts.allows(host: "ximg.example.com"))
        #expect(hosts.allows(host: "203.0.113.7"))
        #expect(hosts.allows(host: "[2001:db8::1]"))
        #expect(!hosts.allows(host: "203.0.113.8"))
    }

    @Test func deniesARedirectToADeniedAddress() async throws {
        let engine = try engine()
        defer { engine.shutdown(); origin.stop() }
        let result = await fetch(engine, origin.url("/small.bin?location=http://127.0.0.2:\(origin.port)/small.bin"))
        #expect(reason(result) == "address-denied")
    }

    @Test(arguments: ["file:///etc/passwd", "ftp://127.0.0.1/x", "gopher://127.0.0.1/x"])
    func refusesRedirectsToOtherSchemes(_ target: String) async throws {
        let engine = try engine()
        defer { engine.shutdown(); origin.stop() }
        #expect(reason(await fetch(engine, origin.url("/small.bin?location=\(target)"))) == "fetch-failed")
    }

    @Test func refusesOtherSchemesAndUserInfo() async throws {
        let engine = try engine()
        defer { engine.shutdown(); origin.stop() }
        #expect(reason(await fetch(engine, "file:///etc/passwd")) == "fetch-failed")
        #expect(reason(await fetch(engine, "http://user:pw@127.0.0.1:\(origin.port)/small.bin")) == "fetch-failed")
        #expect(origin.statistics.requests == 0)
    }

    @Test func aRedirectToAURLWithUserInformationIsNotFollowed() async throws {
        let engine = try engine()
        defer { engine.shutdown(); origin.stop() }
        for target in ["http://user:pw@127.0.0.1:\(origin.port)/small.bin", "//user@127.0.0.1:\(origin.port)/small.bin"] {
            let result = await fetch(engine, origin.url("/small.bin?location=\(target)"))
            #expect(reason(result) == "fetch-failed")
        }
        #expect(origin.statistics.requests == 2)  // the redirects, never their targets
    }

    /// Through a proxy the policy cannot see where curl goes: a target named by a private
    /// address literal is refused before anything is sent (the proxy here is the origin itself).
    @Test(arguments: ["http://127.0.0.1/x.jpg", "http://[::1]/x.jpg", "http://169.254.169.254/latest", "http://[::ffff:10.0.0.1]/"])
    func aPrivateTargetIsRefusedThroughAProxy(_ url: String) async throws {
        let engine = try FetchEngine(configuration: .init(policy: AddressPolicy(), proxy: "http://127.0.0.1:\(origin.port)"))
        defer { engine.shutdown(); origin.stop() }
        #expect(reason(await fetch(engine, url)) == "address-denied")
        #expect(origin.statistics.requests == 0)
    }

    @Test func aURLWithAControlCharacterIsInvalid() async throws {
        let engine = try engine()
        defer { engine.shutdown(); origin.stop() }
        for bad in ["\u{0}@169.254.169.254/", "\u{0}", "\u{7f}x", "\u{1b}"] {
            guard case .failure(let error) = await fetch(engine, origin.url("/small.bin") + bad) else {
                Issue.record("a URL with \(Array(bad.utf8)) was fetched")
                continue
            }
            #expect(error.message.contains("not a valid URL"))
        }
        #expect(origin.statistics.requests == 0)
    }

    @Test func rejectsAHugeContentLengthBeforeTheBody() async throws {
        let engine = try engine()
        defer { engine.shutdown(); origin.stop() }
        let start = ContinuousClock.now
        let result = await fetch(engine, origin.url("/media.bin?length=10000000000&rate=1000"), deadline: .seconds(30),
                                 maxBytes: 10 << 20)
        // 10 GB at 1 KB/s against a 30 s deadline: waiting for the body would end in `timeout`.
        #expect(reason(result) == "too-large")
        #expect(start.duration(to: .now) < .seconds(10))
    }

    @Test func stopsAnEndlessBodyAtTheCap() async throws {
        let engine = try engine()
        defer { engine.shutdown(); origin.stop() }
        #expect(reason(await fetch(engine, origin.url("/small.bin?endless=1"), maxBytes: 1 << 20)) == "too-large")
    }

    @Test func reportsHTTPErrors() async throws {
        let engine = try engine()
        defer { engine.shutdown(); origin.stop() }
        guard case .failure(let error) = await fetch(engine, origin.url("/missing.jpg")) else {
            Issue.record("a 404 succeeded")
            return
        }
        #expect(error.code == .fetchFailed)
        #expect(error.status == 404)
    }

    @Test func doesNotInflateGzip() async throws {
        let engine = try engine()
        defer { engine.shutdown(); origin.stop() }
        let result = try await fetch(engine, origin.url("/hello.gz?encoding=gzip")).get()
        #expect(try result.body.readAll() == Self.gzipHello)
    }

    @Test func thePrefixInspectorStopsEarly() async throws {
        let engine = try engine()
        defer { engine.shutdown(); origin.stop() }
        let request = FetchRequest(url: origin.url("/media.bin?rate=20000"), prefixLength: 16) { _ in
            .reject(NotMedia())
        }
        let start = ContinuousClock.now
        do {
            _ = try await engine.fetch(request, deadline: .now + .seconds(30))
            Issue.record("the inspector's refusal was ignored")
        } catch let error as FetchError {
            #expect(error.code == .rejected && error.rejection is NotMedia)
            #expect(start.duration(to: .now) < .seconds(8))  // the body takes 10 s
        }
    }

    @Test func bigBodiesSpillToATempFileThatIsRemoved() async throws {
        let directory = try makeTempDirectory()
        let engine = try engine(memoryThreshold: 4096, tempDirectory: directory)
        defer { engine.shutdown(); origin.stop() }
        do {
            let result = try await fetch(engine, origin.url("/media.bin")).get()
            #expect(result.body.path != nil)
            #expect(try result.body.readAll() == Self.body)
            #expect(try result.body.sha256() == SHA256Hasher.hex(Self.body))  // hashed from its file, when asked
            #expect(listDirectory(directory).count == 1)
        }
        #expect(listDirectory(directory).isEmpty)
    }

    @Test func theStreamingFormHandsOverEveryByteAndKeepsNone() async throws {
        let engine = try engine(memoryThreshold: 1024)
        defer { engine.shutdown(); origin.stop() }
        let seen = Mutex<[UInt8]>([])
        var request = FetchRequest(url: origin.url("/media.bin"))
        request.stream = { chunk in
            seen.withLock { $0.append(contentsOf: chunk) }
            return true
        }
        let result = try await engine.fetch(request, deadline: .now + .seconds(5))
        #expect(seen.withLock { $0 } == Self.body)
        #expect(result.bytes == Self.body.count)
        #expect(result.body.count == 0)
        #expect(result.body.path == nil)  // over the memory threshold, yet no temp file
    }

    @Test func aStreamingConsumerCanStopTheTransfer() async throws {
        let engine = try engine()
        defer { engine.shutdown(); origin.stop() }
        var request = FetchRequest(url: origin.url("/media.bin?rate=20000"))
        request.stream = { _ in false }
        let start = ContinuousClock.now
        do {
            _ = try await engine.fetch(request, deadline: .now + .seconds(10))
            Issue.record("the transfer should have stopped")
        } catch let error as FetchError {
            #expect(error.code == .fetchFailed)
            #expect(error.message.contains("consumer"))
        }
        #expect(start.duration(to: .now) < .seconds(5))  // not the ten seconds the body would take
    }

    @Test func transfersBeyondAnOriginsWindowWaitInOrderWithoutHoldingUpOthers() async throws {
        let other = try Self.makeOrigin()
        defer { other.stop() }
        let engine = try FetchEngine(configuration: .init(policy: loopback, maxTransfersPerOrigin: 2))
        defer { engine.shutdown(); origin.stop() }
        // Eight slow transfers to one origin: two at a time, the rest queued in the engine.
        let slow = origin.url("/small.bin?delay=2000")
        let started = ContinuousClock.now
        async let slowOnes = withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<8 {
                group.addTask { try await engine.fetch(FetchRequest(url: slow), deadline: .now + .seconds(30)).bytes }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(await eventually { engine.inFlight == 8 })
        // Another origin is not behind that queue (which takes four rounds of 2 s to drain).
        let asked = ContinuousClock.now
        let quick = try await engine.fetch(FetchRequest(url: other.url("/small.bin")), deadline: .now + .seconds(15))
        #expect(quick.bytes == 3)
        #expect(asked.duration(to: .now) < .seconds(5))
        let sizes = try await slowOnes
        #expect(sizes == Array(repeating: 3, count: 8))
        // Four rounds of two, each held 2 s by the origin (a lower bound: a busy machine only adds).
        #expect(started.duration(to: .now) >= .milliseconds(7950))
    }

    @Test func twoHundredConcurrentTransfersReuseConnections() async throws {
        let engine = try engine()
        defer { engine.shutdown(); origin.stop() }
        let url = origin.url("/media.bin")
        let sizes = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<200 {
                group.addTask { try await engine.fetch(FetchRequest(url: url), deadline: .now + .seconds(20)).bytes }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(sizes.count == 200)
        #expect(sizes.allSatisfy { $0 == Self.body.count })
        // At most 16 connections per host by default; the rest of the 200 reused them.
        print("200 transfers opened \(engine.connectionsOpened) connections (origin saw \(origin.statistics.connections))")
        #expect(origin.statistics.connections <= 16)
        #expect(engine.connectionsOpened == origin.statistics.connections)
    }
}

/// What the fetch suites share: an origin with fixtures, engines, and a way to call them.
protocol FetchEngineTesting {
    var origin: Origin { get }
}

extension FetchEngineTesting {
    static var body: [UInt8] { fixtureBody }
    /// "hello", gzip-compressed.
    static var gzipHello: [UInt8] { [0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 0x03, 0xcb, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0, 0x86, 0xa6, 0x10, 0x36, 0x05, 0, 0, 0] }

    var loopback: AddressPolicy { AddressPolicy(allowed: [CIDR("127.0.0.1/32")!]) }

    static func makeOrigin() throws -> Origin {
        try Origin(files: ["/media.bin": body, "/small.bin": [1, 2, 3], "/hello.gz": gzipHello])
    }

    func engine(_ policy: AddressPolicy? = nil, memoryThreshold: Int = 1 << 20, tempDirectory: String = "/tmp") throws -> FetchEngine {
        try FetchEngine(configuration: .init(policy: policy ?? loopback, memoryThreshold: memoryThreshold, tempDirectory: tempDirectory))
    }

    func fetch(_ engine: FetchEngine, _ url: String, deadline: Duration = Fixtures.generousDeadline, maxBytes: Int = 50 << 20,
               allowedHosts: HostAllowlist? = nil) async -> Result<FetchResult, FetchError> {
        var request = FetchRequest(url: url, maxBytes: maxBytes)
        request.allowedHosts = allowedHosts
        do {
            return .success(try await engine.fetch(request, deadline: .now + deadline))
        } catch let error as FetchError {
            return .failure(error)
        } catch {
            return .failure(FetchError(.fetchFailed, "\(error)"))
        }
    }

    func reason(_ result: Result<FetchResult, FetchError>) -> String {
        switch result {
        case .success: return "success"
        case .failure(let e): return e.code.description
        }
    }

}

/// Timing-sensitive: run on their own (`make test` runs every *Deadline* suite after the rest,
/// one test at a time), so other suites' CPU work on a 2-core machine cannot skew them.
@Suite(.serialized) struct FetchDeadlineTests: FetchEngineTesting {
    let origin: Origin

    init() throws {
        origin = try Self.makeOrigin()
    }

    @Test(arguments: [1, 2048])
    func stopsADripAtTheDeadline(_ rate: Int) async throws {
        let engine = try engine()
        defer { engine.shutdown(); origin.stop() }
        let start = ContinuousClock.now
        let result = await fetch(engine, origin.url("/media.bin?rate=\(rate)"), deadline: .milliseconds(800))
        let elapsed = start.duration(to: .now)
        #expect(reason(result) == "timeout")
        #expect(elapsed < .milliseconds(1800))  // the deadline + 1 s: the drip was not waited for
    }

    @Test func stopsAServerThatNeverAnswersAtTheDeadline() async throws {
        let engine = try engine()
        defer { engine.shutdown(); origin.stop() }
        let start = ContinuousClock.now
        let result = await fetch(engine, origin.url("/media.bin?hang=1"), deadline: .milliseconds(300))
        #expect(reason(result) == "timeout")
        #expect(start.duration(to: .now) < .milliseconds(1300))  // the deadline + 1 s
    }

    @Test func aTransferWaitingForItsWindowStillKeepsItsDeadlineAndCanBeCancelled() async throws {
        let engine = try FetchEngine(configuration: .init(policy: loopback, maxTransfersPerOrigin: 1))
        defer { engine.shutdown(); origin.stop() }
        let hang = origin.url("/small.bin?hang=1")
        let blocker = Task { try await engine.fetch(FetchRequest(url: hang), deadline: .now + .seconds(10)) }
        #expect(await eventually { engine.inFlight == 1 })
        // Queued behind the hanging transfer: its own deadline ends it.
        let start = ContinuousClock.now
        let late = await fetch(engine, origin.url("/small.bin"), deadline: .milliseconds(300))
        #expect(reason(late) == "timeout")
        #expect(start.duration(to: .now) < .milliseconds(1300))  // its deadline + 1 s, not the blocker's 10 s
        // Queued again: cancelling it ends it at once.
        let queued = Task { try await engine.fetch(FetchRequest(url: origin.url("/small.bin")), deadline: .now + .seconds(10)) }
        #expect(await eventually { engine.inFlight == 2 })
        queued.cancel()
        await #expect(throws: CancellationError.self) { try await queued.value }
        blocker.cancel()
        _ = await blocker.result
        #expect(await eventually { engine.inFlight == 0 })
    }

    @Test func cancellationFreesTheTransferAndItsTempFile() async throws {
        let directory = try makeTempDirectory()
        let engine = try engine(memoryThreshold: 1024, tempDirectory: directory)
        defer { engine.shutdown(); origin.stop() }
        let url = origin.url("/media.bin?rate=20000")
        let task = Task { try await engine.fetch(FetchRequest(url: url), deadline: .now + .seconds(30)) }
        #expect(await eventually { listDirectory(directory).count == 1 })  // the body is being written
        let start = ContinuousClock.now
        task.cancel()
        let result = await task.result
        #expect(start.duration(to: .now) < .seconds(2))  // the rest of the body would take ~9 s
        #expect(throws: CancellationError.self) { try result.get() }
        #expect(await eventually { engine.inFlight == 0 })
        #expect(await eventually { listDirectory(directory).isEmpty })
    }
}

private let fixtureBody: [UInt8] = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }

/// What a prefix inspector refuses with: the fetch carries it back unchanged.
struct NotMedia: Error {}
