import Attache
import AttacheEnrichment
import Testing

@Suite struct DeadlinePolicyTests {
    @Test func aHeaderIsWholeMillisecondsCappedAtTheMaximum() {
        let policy = DeadlinePolicy(default: .seconds(3), maximum: .seconds(30))
        #expect(policy.budget(header: nil) == .seconds(3))
        #expect(policy.budget(header: "") == .seconds(3))
        #expect(policy.budget(header: "   ") == .seconds(3))
        #expect(policy.budget(header: "1500") == .milliseconds(1500))
        #expect(policy.budget(header: "\t1500 ") == .milliseconds(1500))
        #expect(policy.budget(header: "0") == .milliseconds(1))
        #expect(policy.budget(header: "000") == .milliseconds(1))
        #expect(policy.budget(header: "30001") == .seconds(30))
        #expect(policy.budget(header: "999999999999") == .seconds(30))
        // Past Int's reach: still a deadline longer than any maximum, so the maximum.
        #expect(policy.budget(header: "9999999999999999999999") == .seconds(30))
        #expect(policy.budget(header: "12345678901234567890123") == .seconds(30))
        for bad in ["-1", "+5", "1.5", "2s", "1 5", "ten", "١٢", "5\u{a0}", "\u{a0}5"] {
            #expect(policy.budget(header: bad) == .seconds(3), "\(bad)")
            #expect(DeadlinePolicy.isMalformed(bad), "\(bad)")
        }
        for fine in [nil, "", " \t", "5", " 12345678901234567890123 "] {
            #expect(!DeadlinePolicy.isMalformed(fine), "\(fine ?? "nil")")
        }
    }

    @Test func theMaximumIsNeverBelowTheDefaultAndACapLowersBoth() {
        #expect(DeadlinePolicy(default: .seconds(40), maximum: .seconds(30)).maximum == .seconds(40))
        let capped = DeadlinePolicy(default: .seconds(10), maximum: .seconds(30)).capped(at: .seconds(5))
        #expect(capped == DeadlinePolicy(default: .seconds(5), maximum: .seconds(5)))
        #expect(capped.budget(header: "20000") == .seconds(5))
    }
}
