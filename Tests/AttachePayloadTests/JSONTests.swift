import Testing
@testable import AttachePayload

@Suite struct JSONTests {
    func roundTrip(_ text: String) throws -> String {
        JSONWriter.string(try JSONParser().parse(Array(text.utf8)))
    }

    @Test func keepsKeyOrderNumberSpellingAndUnknownKeys() throws {
        let text = #"{"z":1,"a":{"y":1.50,"x":-0,"w":1e3,"v":2E-7},"m":[true,false,null,"s"],"custom-key":{"nested":[[]]}}"#
        #expect(try roundTrip(text) == text)
    }

    @Test func decodesEscapesAndReencodesMinimally() throws {
        let parsed = try JSONParser().parse(Array(#"{"s":"a\"b\\c\n\u00e9\ud83d\ude00\/"}"#.utf8))
        #expect(parsed.objectValue?["s"]?.stringValue == "a\"b\\c\né😀/")
        #expect(JSONWriter.string(parsed) == #"{"s":"a\"b\\c\né😀/"}"#)
    }

    /// The word-at-a-time scan against the byte-at-a-time rule: every byte value at every place
    /// of strings from 0 to 24 bytes (a word's every lane, the tail after the last word), in
    /// strings of a neighbour just below and just above each escaped range.
    @Test func findsEveryByteThatMustBeEscapedWhereverItIs() {
        for filler: UInt8 in [0x20, 0x21, 0x23, 0x5b, 0x5d, 0x7f, 0x80, 0xff] {
            for count in 0...24 {
                var bytes = [UInt8](repeating: filler, count: count)
                bytes.withUnsafeBufferPointer { #expect(!JSONWriter.needsEscape($0)) }
                for place in 0..<count {
                    for value in 0...255 {
                        bytes[place] = UInt8(value)
                        let found = bytes.withUnsafeBufferPointer { JSONWriter.needsEscape($0) }
                        if found != JSONWriter.escaped(UInt8(value)) {
                            Issue.record("byte \(value) at \(place) of \(count) among \(filler): \(found)")
                        }
                    }
                    bytes[place] = filler
                }
            }
        }
        #expect(JSONWriter.string(.string("0123456789abcdef\u{1}\"x\\")) == #""0123456789abcdef\u0001\"x\\""#)
    }

    @Test func readsStringsWithoutEscapesAsTheyAre() throws {
        // ASCII, and UTF-8 (two-, three- and four-byte sequences), with no escape to decode.
        let text = #"{"plain":"https://cdn.example.com/a.jpg","é":"Grüße, 東京 😀","":""}"#
        let parsed = try JSONParser().parse(Array(text.utf8))
        #expect(parsed.objectValue?["é"]?.stringValue == "Grüße, 東京 😀")
        #expect(parsed.objectValue?["plain"]?.stringValue == "https://cdn.example.com/a.jpg")
        #expect(parsed.objectValue?[""]?.stringValue == "")
        #expect(try roundTrip(text) == text)
    }

    @Test(arguments: [
        "", "{", "{\"a\":}", "{\"a\":1,}", "[1,]", "01", "1.", "-", "\"\\x\"", "{\"a\":tru}", "{} {}",
        "\"\u{01}\"", "\"\\ud800\"", "{\"a\" 1}", "nul",
    ])
    func rejectsInvalidJSON(_ text: String) {
        #expect(throws: PayloadError.self) { try JSONParser().parse(Array(text.utf8)) }
    }

    @Test func invalidJSONIsPlacedByLineAndColumn() {
        // The column counts characters: "é" is two bytes and one column.
        let text = "{\n  \"a\": 1,\n  \"é\": x\n}"
        do {
            _ = try JSONParser().parse(Array(text.utf8))
            Issue.record("parsed invalid JSON")
        } catch {
            #expect(error.location?.line == 3)
            #expect(error.location?.column == 8)
            #expect(error.message.hasPrefix("invalid JSON at line 3, column 8:"))
        }
    }

    @Test func rejectsInvalidUTF8() {
        #expect(throws: PayloadError.self) { try JSONParser().parse([0x22, 0xC3, 0x28, 0x22]) }
        // After an escape too: the string is then read byte by byte.
        #expect(throws: PayloadError.self) { try JSONParser().parse([0x22, 0x5C, 0x6E, 0xC3, 0x28, 0x22]) }
    }

    @Test func limitsDepthAndSize() throws {
        let deep64 = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        _ = try JSONParser().parse(Array(deep64.utf8))
        let deep65 = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        #expect(throws: PayloadError(.tooDeep, "JSON nested deeper than 64 levels")) { try JSONParser().parse(Array(deep65.utf8)) }
        let big = Array("{\"a\":\"\(String(repeating: "x", count: 70_000))\"}".utf8)
        #expect { try JSONParser().parse(big) } throws: { ($0 as? PayloadError)?.code == .tooLarge }
    }

    @Test func payloadMustBeAnObject() {
        #expect { try Payload(bytes: Array("[1]".utf8)) } throws: { ($0 as? PayloadError)?.code == .notAnObject }
        #expect { try Payload(bytes: Array("\"x\"".utf8)) } throws: { ($0 as? PayloadError)?.code == .notAnObject }
    }

    @Test func mutableContentMustBeTheNumberOne() throws {
        func mutable(_ aps: String) throws -> Bool {
            try Payload(bytes: Array("{\"aps\":{\"alert\":\"hi\",\(aps)}}".utf8)).wantsServiceExtension
        }
        #expect(try mutable("\"mutable-content\":1"))
        #expect(try mutable("\"mutable-content\":1.0"))
        #expect(try !mutable("\"mutable-content\":0"))
        #expect(try !mutable("\"mutable-content\":\"1\""))
        #expect(try !mutable("\"badge\":1"))
        #expect(try !Payload(bytes: Array(#"{"aps":{"mutable-content":1}}"#.utf8)).wantsServiceExtension)  // no alert
    }

    @Test func setAlertTurnsAStringAlertIntoADictionary() throws {
        var root = try Payload(bytes: Array(#"{"aps":{"alert":"body text","sound":"x"},"k":1}"#.utf8)).root
        root.setAlert(title: "T", subtitle: nil, body: nil)
        #expect(JSONWriter.string(.object(root)) == #"{"aps":{"alert":{"body":"body text","title":"T"},"sound":"x"},"k":1}"#)
    }

    @Test func replacesAtPaths() throws {
        var value = try JSONParser().parse(Array(#"{"a":{"b":["x","y"]}}"#.utf8))
        let replaced = value.replace(at: [.key("a"), .key("b"), .index(1)][...], with: .string("z"))
        let missing = value.replace(at: [.key("a"), .key("c")][...], with: .string("z"))
        #expect(replaced)
        #expect(!missing)
        #expect(JSONWriter.string(value) == #"{"a":{"b":["x","z"]}}"#)
    }
}
