import Attache
import Testing
@testable import AttacheHTTPService

@Suite struct ServerTimingTests {
    @Test func eachStageIsTheSlowestAttachmentsToATenthOfAMillisecond() {
        var first = AttachmentReport(id: "a", source: "https://a.example/1.jpg")
        first.timings.firstByte = 10.04
        first.timings.download = 2.5
        first.timings.render = 0.05
        var second = AttachmentReport(id: "b", source: "https://a.example/2.jpg")
        second.timings.inspect = 1999.96
        second.timings.render = 0.04
        let report = EnrichReport(outcome: .enriched, reason: nil, elapsedMs: 2012.349, deadlineMs: 3000, payloadBytes: 10,
                                  attachments: [first, second])
        #expect(EnrichController.serverTiming(report) == "fetch;dur=12.5, inspect;dur=2000.0, render;dur=0.1, store;dur=0.0, total;dur=2012.3")
    }

    @Test func aPayloadWithoutAttachmentsHasItsTotalOnly() {
        let report = EnrichReport(outcome: .passthrough, reason: nil, elapsedMs: 0.26, deadlineMs: 3000, payloadBytes: 10, attachments: [])
        #expect(EnrichController.serverTiming(report) == "fetch;dur=0.0, inspect;dur=0.0, render;dur=0.0, store;dur=0.0, total;dur=0.3")
    }
}

@Suite struct RequestIDTests {
    @Test func aNewRequestIDIs24HexDigitsAndNeverTheSame() {
        let ids = (0..<1000).map { _ in EnrichController.newRequestID() }
        #expect(ids.allSatisfy { $0.wholeMatch(of: /[0-9a-f]{24}/) != nil })
        #expect(Set(ids).count == ids.count)
    }
}
