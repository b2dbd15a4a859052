import Testing
@testable import AttacheSupport

@Suite struct SHA256HasherTests {
    /// FIPS 180-2's examples, through libcrypto loaded on first use; and a body fed in pieces of
    /// every size from 1 to 97 bytes (hashed as it arrives) agrees with the same body whole.
    @Test func knownDigestsWholeAndInPieces() throws {
        #expect(try SHA256Hasher.hex([]) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(try SHA256Hasher.hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(try SHA256Hasher.hex([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000))
                == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
        let body = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 7) }
        let whole = try SHA256Hasher.hex(body)
        for piece in 1...97 {
            var hasher = try SHA256Hasher()
            for start in stride(from: 0, to: body.count, by: piece) {
                hasher.update(Array(body[start..<min(start + piece, body.count)]))
            }
            #expect(try hasher.hex == whole, "in pieces of \(piece)")
        }
    }

    /// A value: a copy goes on from where the original was, and the original is unchanged by it.
    @Test func aCopyGoesOnFromWhereTheOriginalWas() throws {
        var hasher = try SHA256Hasher()
        hasher.update(Array("ab".utf8))
        var copy = hasher
        copy.update(Array("c".utf8))
        #expect(try copy.hex == SHA256Hasher.hex(Array("abc".utf8)))
        #expect(try hasher.hex == SHA256Hasher.hex(Array("ab".utf8)))
        hasher.update(Array("c".utf8))
        #expect(try hasher.finalize() == copy.finalize())
    }
}
