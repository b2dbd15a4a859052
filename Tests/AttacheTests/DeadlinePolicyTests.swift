import Attache
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
        // Too long to be milliseconds anyone means, and past Int's reach if longer still.
        #expect(policy.budget(header: "9999999999999999999999") == .seconds(3))
        for bad in ["-1", "+5", "1.5", "2s", "1 5", "ten", "١٢"] {
            #expect(policy.budget(header: bad) == .seconds(3), "\(bad)")
        }
    }

    @Test func theMaximumIsNeverBelowTheDefaultAndACapLowersBoth() {
        #expect(DeadlinePolicy(default: .seconds(40), maximum: .seconds(30)).maximum == .seconds(40))
        let capped = DeadlinePolicy(default: .seconds(10), maximum: .seconds(30)).capped(at: .seconds(5))
        #expect(capped == DeadlinePolicy(default: .seconds(5), maximum: .seconds(5)))
        #expect(capped.budget(header: "20000") == .seconds(5))
    }
}
