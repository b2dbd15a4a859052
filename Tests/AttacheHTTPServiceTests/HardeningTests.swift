import AttacheHTTPKit
import Attache
import AttacheEnrichment
import AttacheFetch
import AttacheHTTPService
import AttacheOrigin
import AttacheSupport
import AttacheTesting
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// What hostile testing found in the service, each fixed with a test that failed before.
@Suite struct ServiceHardeningTests {
    /// A path the service has, asked with another method, is 405 with the methods it has in
    /// `Allow` (the contract's fuzzer found 404s); a path it does not have stays 404.
    @Test func aMethodAPathDoesNotAnswerIs405WithAllow() async throws {
        let h = try ServiceHarness(tokens: ["secret"])
        defer { h.stop() }
        try await h.app.test(.live) { client in
            let cases: [(String, HTTPRequest.Method, String)] = [
                ("/v1/enrich", .get, "POST"), ("//v1/enrich/", .delete, "POST"), ("/healthz", .post, "GET"), ("/readyz", .put, "GET"),
                ("/metrics", .post, "GET"), ("/media/abc.jpg", .put, "GET, HEAD"), ("/media/a/b", .options, "GET, HEAD"),
            ]
            for (path, method, allow) in cases {
                try await client.execute(uri: path, method: method) { r in
                    #expect(r.status == .methodNotAllowed, "\(method) \(path) answered \(r.status)")
                    #expect(r.headers[.allow] == allow)
                    #expect(String(buffer: r.body).hasPrefix(#"{"error":"#))
                }
            }
            for (path, method) in [("/v1/other", HTTPRequest.Method.get), ("/media", .get), ("/nothing", .delete)] {
                try await client.execute(uri: path, method: method) { r in #expect(r.status == .notFound, "\(path) answered \(r.status)") }
            }
            try await client.execute(uri: "/v1/enrich", method: .post, body: h.payload(fcmPayload)) { r in #expect(r.status == .unauthorized) }
        }
    }

    /// The router treats empty segments and a trailing slash as the route they spell; the token is
    /// asked for on the route that matched, so no spelling gets past it.
    @Test func everySpellingOfAGuardedRouteNeedsTheToken() async throws {
        let h = try ServiceHarness(tokens: ["secret"])
        defer { h.stop() }
        try await h.app.test(.live) { client in
            let enrich = ["/v1/enrich", "//v1/enrich", "///v1/enrich", "/v1//enrich", "/v1/enrich/", "/v1/enrich//",
                          "/v1%2Fenrich", "/%2Fv1/enrich", "/v1/%65nrich"]
            for path in enrich {
                try await client.execute(uri: path, method: .post, body: h.payload(fcmPayload)) { r in
                    #expect(r.status == .unauthorized || r.status == .notFound, "\(path) answered \(r.status)")
                }
            }
            for path in ["/metrics", "/metrics/", "//metrics", "/metrics//", "/%6Detrics", "/metrics%2F"] {
                try await client.execute(uri: path, method: .get) { r in
                    #expect(r.status == .unauthorized || r.status == .notFound, "\(path) answered \(r.status)")
                }
            }
            // The spellings the router takes for the route are refused as the route, and pass with the token.
            for path in ["//v1/enrich", "///v1/enrich", "/v1/enrich/"] {
                try await client.execute(uri: path, method: .post, body: h.payload(fcmPayload)) { r in
                    #expect(r.status == .unauthorized, "\(path) answered \(r.status)")
                }
                try await client.execute(uri: path, method: .post, headers: [.authorization: "Bearer secret"],
                                         body: h.payload(fcmPayload)) { r in
                    #expect(r.status == .ok, "\(path) with the token answered \(r.status)")
                }
            }
            try await client.execute(uri: "//healthz", method: .get) { r in #expect(r.status == .ok) }
        }
        // Only the requests that carried the token fetched anything (one image, cached after).
        #expect(h.origin.statistics.requests == 1)
    }

    @Test func aHalfSentRequestLineIsClosedAfterTheHeaderTimeout() async throws {
        let h = try ServiceHarness(connections: ConnectionLimits(headerTimeout: .milliseconds(500), idleTimeout: .milliseconds(500)))
        defer { h.stop() }
        try await h.app.test(.live) { client in
            let port = try #require(client.port)
            let half = try RawConnection(port: port)
            let start = ContinuousClock.now
            half.send("POST /v1/enr")
            #expect(await half.readUntilClosed(within: .seconds(5)) != nil, "still open after 5 s")
            #expect(start.duration(to: .now) < .seconds(4))
            // A request that was answered leaves a keep-alive connection: closed when idle too.
            let idle = try RawConnection(port: port)
            idle.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            let answer = try #require(await idle.readUntilClosed(within: .seconds(5)))
            #expect(answer.hasPrefix("HTTP/1.1 200"))
        }
    }

    /// A connection's guard keeps one timer for the limits a request arms in turn (the header's,
    /// the body's, the idle wait's) and moves it only when a limit ends sooner: the header
    /// limit's timer, run out while the connection waits idle, must wait on for the idle limit
    /// (not close the connection), and then close it.
    @Test func aKeptConnectionLastsItsIdleTimeThoughAShorterLimitWasArmedFirst() async throws {
        let h = try ServiceHarness(connections: ConnectionLimits(headerTimeout: .milliseconds(300), bodyTimeout: .milliseconds(300),
                                                                 idleTimeout: .seconds(3)))
        defer { h.stop() }
        try await h.app.test(.live) { client in
            let c = try RawConnection(port: try #require(client.port))
            c.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(await c.readSome(within: .seconds(5))?.hasPrefix("HTTP/1.1 200") == true)
            try await Task.sleep(for: .seconds(1))  // past the header and body limits, within the idle one
            c.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(await c.readSome(within: .seconds(5))?.hasPrefix("HTTP/1.1 200") == true, "closed before its idle time")
            #expect(await c.readUntilClosed(within: .seconds(10)) != nil, "still open 10 s after its answer")
        }
    }

    /// A request that asks to close gets an answer that says so, then the close; the others keep
    /// their connection. (Without the header, wrk counted a read error for every such request.)
    @Test func aRequestThatAsksToCloseIsToldItWillBe() async throws {
        let h = try ServiceHarness()
        defer { h.stop() }
        try await h.app.test(.live) { client in
            let port = try #require(client.port)
            for header in ["Connection: close", "Connection: keep-alive, Close", "connection:close"] {
                let c = try RawConnection(port: port)
                c.send("POST /v1/enrich HTTP/1.1\r\nHost: x\r\n\(header)\r\nContent-Length: 10\r\n\r\n{\"aps\":{}}")
                let answer = try #require(await c.readUntilClosed(within: .seconds(5)), "\(header): not closed")
                #expect(answer.hasPrefix("HTTP/1.1 200"))
                #expect(answer.lowercased().contains("\r\nconnection: close\r\n"), "\(header): \(answer)")
            }
            // Pipelined: only the answer to the request that asked says close, and it is the last.
            let c = try RawConnection(port: port)
            c.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            let both = try #require(await c.readUntilClosed(within: .seconds(5)))
            let answers = both.components(separatedBy: "HTTP/1.1 200").dropFirst()
            #expect(answers.count == 2)
            #expect(answers.first.map { !$0.lowercased().contains("connection: close") } == true)
            #expect(answers.last.map { $0.lowercased().contains("connection: close") } == true)
            let kept = try RawConnection(port: port)
            kept.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            let answer = try #require(await kept.readSome(within: .seconds(5)))
            #expect(!answer.lowercased().contains("connection: close"))
        }
    }

    @Test func aDrippedBodyIsClosedAfterTheBodyTimeout() async throws {
        let h = try ServiceHarness(connections: ConnectionLimits(bodyTimeout: .milliseconds(500)))
        defer { h.stop() }
        try await h.app.test(.live) { client in
            let c = try RawConnection(port: try #require(client.port))
            c.send("POST /v1/enrich HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"aps\":")
            #expect(await c.readUntilClosed(within: .seconds(5)) != nil, "still open after 5 s")
        }
        #expect(h.origin.statistics.requests == 0)
    }

    @Test func connectionsPastTheCapAreAnswered503() async throws {
        let h = try ServiceHarness(connections: ConnectionLimits(maxConnections: 3))
        defer { h.stop() }
        try await h.app.test(.live) { client in
            let port = try #require(client.port)
            // Connections are opened one at a time, each answered before the next, until one is
            // refused (the test client may hold a connection of its own, so it is the 3rd or 4th).
            var held: [RawConnection] = []
            var answers: [String] = []
            for _ in 0..<5 {
                let c = try RawConnection(port: port)
                held.append(c)
                c.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                let answer = await c.readSome(within: .seconds(10)) ?? ""
                answers.append(String(answer.prefix(12)))
                if answer.hasPrefix("HTTP/1.1 503") { break }
            }
            #expect(answers.last == "HTTP/1.1 503", "\(answers)")
            #expect((2...3).contains(answers.filter { $0 == "HTTP/1.1 200" }.count), "\(answers)")
            #expect(await held.last?.readUntilClosed(within: .seconds(5)) != nil)  // and closed
            for c in held { c.close() }
            // Once they are gone, new connections are served again.
            var served = false
            for _ in 0..<50 where !served {
                guard let c = try? RawConnection(port: port) else { continue }
                c.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                served = await c.readSome(within: .seconds(2))?.hasPrefix("HTTP/1.1 200") == true
                c.close()
            }
            #expect(served)
        }
    }

    /// 40 downloads from an origin that drips at 2 KB/s must not hold the media slots that another
    /// origin's media needs: with two slots, the other origin's image is attached within its 15 s
    /// deadline (generous, for a busy machine), while each slow download needs 70 s and is given
    /// 30 s: it is not waiting for them to give up.
    @Test func aSlowOriginDoesNotStarveAnotherOne() async throws {
        let h = try ServiceHarness(deadline: .seconds(30), cache: false, maxMediaJobs: 2)
        defer { h.stop() }
        let slow = try Origin(root: Fixtures.mediaDirectory)
        defer { slow.stop() }
        try await h.app.test(.router) { client in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for i in 0..<40 {
                    group.addTask {
                        let body = #"{"aps":{"alert":"x","mutable-content":1},"image-url":"http://127.0.0.1:\#(slow.port)/photo.jpg?rate=2000&n=\#(i)"}"#
                        try await client.execute(uri: "/v1/enrich", method: .post, headers: [.testDeadline: "30000"],
                                                 body: ByteBuffer(string: body)) { _ in }
                    }
                }
                // 16 at once (curl's connections per host); the other 24 wait in the engine.
                #expect(await eventually { slow.statistics.requests >= 16 })
                for i in 0..<3 {
                    let body = h.payload(#"{"aps":{"alert":"x","mutable-content":1},"image-url":"ORIGIN/alpha.png?n=\#(i)"}"#)
                    try await client.execute(uri: "/v1/enrich", method: .post, headers: [.testDeadline: "15000"], body: body) { r in
                        #expect(r.headers[.testOutcome] == "enriched")
                    }
                }
                group.cancelAll()
            }
        }
    }

    /// A client that disconnects stops its enrichment: the transfer for it ends at once, not at its
    /// 20 s deadline.
    @Test func aClientThatGoesAwayStopsItsWork() async throws {
        let h = try ServiceHarness(deadline: .seconds(20))
        defer { h.stop() }
        try await h.app.test(.live) { client in
            let c = try RawConnection(port: try #require(client.port))
            let body = String(decoding: h.payload(#"{"aps":{"alert":"x","mutable-content":1},"image-url":"ORIGIN/photo.jpg?hang=1"}"#).readableBytesView, as: UTF8.self)
            c.send("POST /v1/enrich HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
            #expect(await eventually { h.enrichment.services.engine.inFlight == 1 })
            c.close()
            #expect(await eventually(within: .seconds(5)) { h.enrichment.services.engine.inFlight == 0 })
        }
    }

    /// The deadline counts from when the request arrived (its head), not from when the service got
    /// to it: a body that comes after the whole 2 s budget is answered at once with the original
    /// (reason timeout), where counting from the body would wait 2 s more for the hung image.
    @Test func theDeadlineCountsFromTheRequestsArrival() async throws {
        let h = try ServiceHarness()
        defer { h.stop() }
        try await h.app.test(.live) { client in
            let c = try RawConnection(port: try #require(client.port))
            let body = String(decoding: h.payload(#"{"aps":{"alert":"x","mutable-content":1},"image-url":"ORIGIN/photo.jpg?hang=1"}"#).readableBytesView, as: UTF8.self)
            let (answer, afterBody) = try await c.postHoldingTheBody("/v1/enrich", fields: ["Attache-Deadline-Ms: 2000"], body: body,
                                                                    after: .milliseconds(2200))
            #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer.prefix(80))")
            #expect(answer.lowercased().contains("attache-outcome: fallback; reason=timeout"), "\(answer)")
            #expect(afterBody < .seconds(1), "answered \(afterBody) after the body")
        }
        #expect(h.origin.statistics.requests == 0)
    }

    /// A link planted in the store (or anything but a regular file) is never served.
    @Test func mediaServesRegularFilesOnlyAndSaysNoSniff() async throws {
        let h = try ServiceHarness()
        defer { h.stop() }
        let link = String(repeating: "a", count: 64) + ".jpg"
        let fifo = String(repeating: "b", count: 64) + ".jpg"
        let plain = String(repeating: "c", count: 64) + ".jpg"
        #expect(symlink("/etc/passwd", "\(h.mediaDirectory)/\(link)") == 0)
        #expect(mkfifo("\(h.mediaDirectory)/\(fifo)", 0o644) == 0)
        try writeFileAtomically("\(h.mediaDirectory)/\(plain)", Array("not really a jpeg".utf8))
        try await h.app.test(.router) { client in
            for name in [link, fifo] {
                try await client.execute(uri: "/media/\(name)", method: .get) { r in
                    #expect(r.status == .notFound, "\(name) answered \(r.status)")
                    #expect(!String(buffer: r.body).contains("root:"))
                }
            }
            try await client.execute(uri: "/media/\(plain)", method: .get) { r in
                #expect(r.status == .ok)
                #expect(r.headers[HTTPField.Name("X-Content-Type-Options")!] == "nosniff")
            }
        }
    }

    @Test func readinessSaysNoWhenTheStoreIsFull() async throws {
        let h = try ServiceHarness(minimumFreeBytes: Int.max / 2)
        defer { h.stop() }
        try await h.app.test(.router) { client in
            try await client.execute(uri: "/readyz", method: .get) { r in
                #expect(r.status == .serviceUnavailable)
                #expect(String(buffer: r.body).contains("full"))
            }
        }
    }
}
