/// Writes JSON compactly; numbers keep their original spelling, strings are escaped minimally
/// (UTF-8 stays UTF-8, which is also what keeps an APNs payload small).
public enum JSONWriter {
    public static func bytes(_ value: JSONValue) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(1024)
        write(value, into: &out)
        return out
    }

    public static func string(_ value: JSONValue) -> String {
        String(decoding: bytes(value), as: UTF8.self)
    }

    static func write(_ value: JSONValue, into out: inout [UInt8]) {
        switch value {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .number(let n): out.append(contentsOf: n.utf8)
        case .string(let s): writeString(s, into: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                write(item, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let object):
            out.append(UInt8(ascii: "{"))
            for (i, member) in object.members.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                writeString(member.key, into: &out)
                out.append(UInt8(ascii: ":"))
                write(member.value, into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    static func writeString(_ s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        // A native string's bytes are read where they are (a copy of `s` to call `withUTF8` on
        // costs a uniqueness check and a retain per string, and a payload is 20-odd strings).
        if s.utf8.withContiguousStorageIfAvailable({ writeEscaped($0, into: &out) }) == nil {
            var copy = s
            copy.withUTF8 { writeEscaped($0, into: &out) }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// Runs that need no escape (nearly every string) go in whole: a payload is written again for
    /// every notification the relay or the service enriches, and a byte at a time cost more than
    /// the rest of writing it.
    private static func writeEscaped(_ bytes: UnsafeBufferPointer<UInt8>, into out: inout [UInt8]) {
        guard needsEscape(bytes) else {
            out.append(contentsOf: bytes)
            return
        }
        var start = 0
        for (i, b) in bytes.enumerated() where escaped(b) {
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<i]))
            start = i + 1
            switch b {
            case 0x22: out.append(contentsOf: [0x5c, 0x22])
            case 0x5c: out.append(contentsOf: [0x5c, 0x5c])
            case 0x0a: out.append(contentsOf: [0x5c, UInt8(ascii: "n")])
            case 0x0d: out.append(contentsOf: [0x5c, UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [0x5c, UInt8(ascii: "t")])
            default: out.append(contentsOf: [0x5c, UInt8(ascii: "u"), 0x30, 0x30, hex[Int(b >> 4)], hex[Int(b & 15)]])
            }
        }
        out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...]))
    }

    /// Whether any byte must be escaped, 8 bytes a step: a byte at a time, the scan cost more
    /// than copying the string. A word has a byte below n (n <= 128) when `(w - n·ones) & ~w`
    /// has a high bit set, and a byte equal to c when `w ^ c·ones` has a zero byte (the tests of
    /// Sean Anderson's "Bit Twiddling Hacks"). Swift's SIMD types compile these compares to a
    /// loop per lane, so plain words it is.
    @inline(__always)
    static func needsEscape(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return false }
        let raw = UnsafeRawPointer(base)
        let ones: UInt64 = 0x0101_0101_0101_0101, high: UInt64 = 0x8080_8080_8080_8080
        var i = 0
        while i + 8 <= bytes.count {
            let w = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            let quote = w ^ (0x22 &* ones), backslash = w ^ (0x5c &* ones)
            let found = ((w &- 0x20 &* ones) & ~w) | ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash)
            if found & high != 0 { return true }
            i += 8
        }
        while i < bytes.count {
            if escaped(bytes[i]) { return true }
            i += 1
        }
        return false
    }

    /// A quote, a backslash or a control character: what JSON does not allow in a string as it is.
    @inline(__always)
    static func escaped(_ b: UInt8) -> Bool { b < 0x20 || b == 0x22 || b == 0x5c }

    private static let hex = Array("0123456789abcdef".utf8)
}
