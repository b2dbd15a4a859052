import Testing
@testable import AttachePayload

/// Cases in the three categories JSON conformance suites (JSONTestSuite's y_, n_ and i_ files)
/// sort parsers by: what RFC 8259 says must parse, what must not, and what it leaves to the
/// implementation — where Attache's choice is pinned here, because a device's parser may differ
/// and a payload must not mean one thing to Attache and another to the phone.
@Suite struct JSONConformanceTests {
    func parse(_ bytes: [UInt8]) throws -> JSONValue { try JSONParser().parse(bytes) }

    /// y_: must be accepted (and written back as it came, numbers' spelling included).
    @Test(arguments: [
        #"[]"#, #"{}"#, #"[[],[[]]]"#, #"{"":0}"#, #"{"a":[]}"#, #"[-0]"#, #"[1E22]"#, #"[1e-2]"#, #"[1.5e+9]"#,
        #"[-123.456e-789]"#, #"[123456789012345678901234567890]"#, #"["\u0000"]"#, #"["\uFFFF"]"#,
        #"["\ud834\udd1e"]"#, #"["\"\\\/\b\f\n\r\t"]"#, #"[true,false,null]"#, #"["€𝄞"]"#, "[\"\u{7F}\"]",
        #"{"a":"b","a":"c"}"#,  // duplicate keys parse; enrichment judges them (ambiguous-payload)
    ])
    func accepts(_ text: String) throws {
        let value = try parse(Array(text.utf8))
        #expect(JSONWriter.string(value).count > 0)
    }

    @Test(arguments: [" [1] ", "\t\n\r[1]\n"])
    func acceptsInsignificantWhitespace(_ text: String) throws {
        #expect(try parse(Array(text.utf8)) == .array([.number("1")]))
    }

    /// n_: must be rejected.
    @Test(arguments: [
        #"[1,,2]"#, #"[,1]"#, #"["a",]"#, #"{"a":1,,"b":2}"#, #"{"a"}"#, #"{1:1}"#, #"{'a':1}"#, #"['a']"#,
        #"[.5]"#, #"[+1]"#, #"[1.e1]"#, #"[0x1]"#, #"[1e]"#, #"[1e+]"#, #"[Infinity]"#, #"[NaN]"#, #"[-01]"#,
        #"[True]"#, #"["\a"]"#, #"["\u12"]"#, #"["\uZZZZ"]"#, "[\"a\u{0A}b\"]", "[\"\u{09}\"]", #"[1]x"#,
        #"["unterminated]"#, #"[1 2]"#, #"{"a":1 "b":2}"#, #"/* comment */[]"#, #"[] // comment"#,
    ])
    func rejects(_ text: String) {
        #expect(throws: PayloadError.self) { try parse(Array(text.utf8)) }
    }

    /// i_: the RFC allows either answer; these are Attache's, each chosen so the bytes cannot be
    /// read two ways.
    @Test func implementationDefined() throws {
        // A byte-order mark: refused (APNs wants plain UTF-8; a BOM hides the first key from some parsers).
        #expect(throws: PayloadError.self) { try parse([0xEF, 0xBB, 0xBF] + Array("{}".utf8)) }
        // Lone surrogates in escapes: refused (they have no UTF-8 form to write back).
        #expect(throws: PayloadError.self) { try parse(Array(#"["\ud800"]"#.utf8)) }
        #expect(throws: PayloadError.self) { try parse(Array(#"["\udd1e"]"#.utf8)) }
        // Invalid UTF-8 (overlong, a surrogate's encoding, truncated): refused.
        for bytes: [UInt8] in [[0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xE2, 0x82]] {
            #expect(throws: PayloadError.self) { try parse([0x5B, 0x22] + bytes + [0x22, 0x5D]) }
        }
        // Huge exponents and long mantissas: kept as written, never rounded.
        #expect(JSONWriter.string(try parse(Array("[1e999,-1e-999,0.10000000000000000000001]".utf8))) == "[1e999,-1e-999,0.10000000000000000000001]")
        // A top-level scalar parses as JSON (a payload must still be an object: `Payload` says so).
        #expect(try parse(Array("7".utf8)) == .number("7"))
    }
}
