import Testing
@testable import AttacheQueueWorker

/// The header block as NATS carries it, read without nats.c's parse (which takes an empty value's
/// line end for blanks and reads the next line as the value).
@Suite struct NATSHeadersTests {
    func headers(_ lines: [String]) -> NATSHeaders? {
        NATSHeaders(block: Array(("NATS/1.0\r\n" + lines.map { $0 + "\r\n" }.joined() + "\r\n").utf8))
    }

    @Test func emptyAndBlankValuesLeaveTheOthersAlone() throws {
        for blank in ["", " ", "\t  "] {
            let h = try #require(headers(["Nats-Msg-Id: m1", "X-Trace:\(blank)", "Attache-Deadline-Ms: 1", "Attache-Tenant: alpha"]))
            #expect(h.first("Nats-Msg-Id") == "m1")
            #expect(h.first("X-Trace") == "")
            #expect(h.first("Attache-Deadline-Ms") == "1")
            #expect(h.first("Attache-Tenant") == "alpha")
            let last = try #require(headers(["Nats-Msg-Id: m1", "Attache-Deadline-Ms: 1", "X-Trace:\(blank)"]))
            #expect(last.first("Attache-Deadline-Ms") == "1")
            #expect(last.first("X-Trace") == "")
        }
    }

    @Test func repeatedNamesKeepTheirOrderAndTheFirstAnswers() throws {
        let h = try #require(headers(["A: 1", "B: x", "A: 2"]))
        #expect(h.first("A") == "1")
        #expect(h.values("A") == ["1", "2"])
        #expect(h.first("a") == "1", "another case finds the name when its spelling is not there")
        #expect(h.first("C") == nil)
    }

    @Test func onlySpacesAndTabsAreTrimmed() throws {
        let h = try #require(headers(["D: \t5\u{a0} "]))
        #expect(h.first("D") == "5\u{a0}")
    }

    @Test func foldedLinesContinueTheValueAndOddLinesAreSkipped() throws {
        let h = try #require(headers(["A: one", "  two", "no colon here", ": no name", "B: b"]))
        #expect(h.first("A") == "one two")
        #expect(h.first("B") == "b")
        #expect(h.fields.count == 2)
    }

    @Test func aStatusLineAndBareLineFeedsRead() throws {
        let h = try #require(NATSHeaders(block: Array("NATS/1.0 100 Idle Heartbeat\nA: 1\n\n".utf8)))
        #expect(h.first("A") == "1")
        #expect(NATSHeaders(block: Array("HTTP/1.1\r\nA: 1\r\n\r\n".utf8)) == nil)
    }
}
