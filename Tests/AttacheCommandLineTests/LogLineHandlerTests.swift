import Logging
import Synchronization
import Testing
@testable import AttacheCommandLine

@Suite struct LogLineHandlerTests {
    /// A metadata value that counts how often it is formatted.
    final class Counted: CustomStringConvertible, Sendable {
        let formatted = Atomic(0)
        var description: String {
            formatted.add(1, ordering: .relaxed)
            return "r-1"
        }
    }

    func event(_ message: Logger.Message, metadata: Logger.Metadata? = nil) -> LogEvent {
        LogEvent(level: .warning, message: message, metadata: metadata, source: "Attache", file: #fileID, function: #function, line: #line)
    }

    @Test func metadataSetOnTheLoggerIsFormattedOnlyWhenALineIsWritten() {
        let id = Counted()
        var handler = LogLineHandler(label: "attache", format: .text)
        for _ in 0..<100 { handler[metadataKey: "hb.request.id"] = .stringConvertible(id) }
        #expect(id.formatted.load(ordering: .relaxed) == 0)
        _ = handler.line(for: event("slow"))
        #expect(id.formatted.load(ordering: .relaxed) == 1)
    }

    @Test func aTextLineIsStreamLogHandlersLine() throws {
        var handler = LogLineHandler(label: "attache", format: .text)
        handler[metadataKey: "b"] = "2"
        let line = handler.line(for: event("fell back", metadata: ["a": "1", "b": "3"]))
        // 2026-12-05T15:20:14+0000 warning attache: a=1 b=3 [Attache] fell back
        let match = try #require(line.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4} (.*)\n/))
        #expect(match.output.1 == "warning attache: a=1 b=3 [Attache] fell back")
    }

    /// A sender's bytes in a message or a value (a URL with a newline, an error quoting it) stay
    /// on their line: the forged line below is one line, not two.
    @Test func aTextLineKeepsWhatASenderWroteOnIt() throws {
        var handler = LogLineHandler(label: "attache", format: .text)
        handler[metadataKey: "url"] = "https://a.example/x\n2026-12-05T15:20:14+0000 error attache: [Attache] forged"
        let line = handler.line(for: event("fetch failed: bad\rurl\u{1}\tend"))
        #expect(line.split(separator: "\n").count == 1 && line.hasSuffix("\n"))
        #expect(line.hasSuffix(#"url=https://a.example/x\n2026-12-05T15:20:14+0000 error attache: [Attache] forged [Attache] fetch failed: bad\rurl\u0001\tend"# + "\n"))
    }

    @Test func aJSONLineQuotesEveryField() {
        let handler = LogLineHandler(label: "attache", format: .json)
        let line = handler.line(for: event("say \"hi\"\n", metadata: ["url": "a\\b"]))
        #expect(line == #"{"level":"warning","label":"attache","message":"say \"hi\"\n","url":"a\\b"}"# + "\n")
    }
}
