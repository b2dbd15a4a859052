@testable import AttacheRelay
import Testing

/// The relay's gate: whether a body names `mutable-content` (or, to FCM, an image), found by a
/// byte search of its own.
@Suite struct GateTests {
    func found(_ needle: String, in body: String) -> Bool {
        Array(body.utf8).withUnsafeBytes { RelayController.find(Array(needle.utf8), in: $0) }
    }

    @Test func findsTheGateWhereverItIs() {
        #expect(found("mutable-content", in: #"{"aps":{"alert":"x","mutable-content":1}}"#))
        #expect(found("mutable-content", in: "mutable-content"))  // the whole body
        #expect(found("mutable-content", in: "mutable-content…"))  // at the start
        #expect(found("mutable-content", in: "…mutable-content"))  // at the very end
        #expect(found("mutable-content", in: "mmmutable-mutable-content"))  // after false starts
    }

    @Test func anythingShortOfItIsNotTheGate() {
        #expect(!found("mutable-content", in: #"{"aps":{"alert":"x"}}"#))
        #expect(!found("mutable-content", in: "mutable-conten"))  // one byte short, at the end
        #expect(!found("mutable-content", in: "mutable_content"))
        #expect(!found("mutable-content", in: ""))
        #expect(!found(#""image""#, in: #"{"message":{"imageUrl":"x"}}"#))
        #expect(found("", in: "anything"))
    }
}
