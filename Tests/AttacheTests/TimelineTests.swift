import Attache
import AttacheEnrichment
import AttacheTimeline
import Testing

@Suite struct TimelineTests {
    func report() -> EnrichReport {
        var fast = AttachmentReport(id: "fast", source: "http://x/a.jpg", outcome: .attached)
        fast.timings.fetchStart = 5
        fast.timings.dns = 10
        fast.timings.connect = 20
        fast.timings.firstByte = 100
        fast.timings.download = 200
        fast.timings.inspectStart = 340
        fast.timings.inspect = 5
        fast.timings.renderStart = 345
        fast.timings.render = 60
        fast.timings.storeStart = 405
        fast.timings.store = 10
        var slow = AttachmentReport(id: "slow", source: "http://x/b.jpg", outcome: .failed)
        slow.reason = .timeout
        slow.timings.fetchStart = 5
        slow.timings.firstByte = 985
        return EnrichReport(outcome: .partial, reason: .timeout, elapsedMs: 995, deadlineMs: 1000, payloadBytes: 900, attachments: [fast, slow])
    }

    @Test func textHasALanePerAttachmentWithItsStages() {
        let lines = TimelineRenderer(report: report()).text(width: 100).split(separator: "\n").map(String.init)
        #expect(lines[0] == "partial (timeout): emitted at 995 ms, deadline 1000 ms")
        let fast = lines.first { $0.hasPrefix("fast") } ?? ""
        // A 5 ms inspect shares its column with render's start, so it is not looked for.
        for symbol in ["d", "c", "w", "=", "r", "s", "▲"] { #expect(fast.contains(symbol), "no \(symbol) in \(fast)") }
        #expect(fast.hasSuffix("attached"))
        let slow = lines.first { $0.hasPrefix("slow") } ?? ""
        #expect(slow.filter { $0 == "w" }.count > 80)  // waiting nearly the whole time
        #expect(slow.hasSuffix("failed timeout"))
    }

    @Test func svgDrawsStagesTheDeadlineAndTheEmission() {
        let svg = TimelineRenderer(report: report()).svg()
        #expect(svg.hasPrefix("<svg xmlns=\"http://www.w3.org/2000/svg\""))
        #expect(svg.components(count: "<title>") == 8)  // 7 stages of one lane (no TLS), the wait of the other
        #expect(svg.contains("stroke=\"#cc0000\" stroke-width=\"2\" stroke-dasharray"))  // deadline
        #expect(svg.contains("stroke=\"#38761d\" stroke-width=\"2\"/>"))  // emitted
        #expect(svg.hasSuffix("</svg>\n"))
    }

    @Test func sweepRangesAndSteps() {
        #expect(DeadlineSweep.range("100ms...5s").map { [$0.0, $0.1] } == [.milliseconds(100), .seconds(5)])
        #expect(DeadlineSweep.range("5s...100ms") == nil)
        #expect(DeadlineSweep.deadlines(from: .milliseconds(100), to: .milliseconds(350), step: .milliseconds(100))
                == [.milliseconds(100), .milliseconds(200), .milliseconds(300), .milliseconds(350)])
    }
}

extension String {
    func components(count target: String) -> Int {
        var n = 0
        var rest = self[...]
        while let r = rest.firstRange(of: target) {
            n += 1
            rest = rest[r.upperBound...]
        }
        return n
    }
}
