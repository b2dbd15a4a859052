import Testing
@testable import AttacheSupport

@Suite struct SHA256Tests {
    /// FIPS 180-2's examples, through libcrypto loaded on first use; and a body fed in pieces of
    /// every size from 1 to 97 bytes (hashed as it arrives) agrees with the same body whole.
    @Test func knownDigestsWholeAndInPieces() throws {
        #expect(try SHA256.hex([]) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(try SHA256.hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(try SHA256.hex([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000))
                == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
        let body = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 7) }
        let whole = try SHA256.hex(body)
        for piece in 1...97 {
            let hasher = try SHA256()
            for start in stride(from: 0, to: body.count, by: piece) {
                hasher.update(Array(body[start..<min(start + piece, body.count)]))
            }
            #expect(try hasher.hex == whole, "in pieces of \(piece)")
        }
    }
}
