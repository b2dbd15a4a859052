/// Writes JSON compactly; numbers keep their original spelling, strings are escaped minimally
/// (UTF-8 stays UTF-8, which is also what keeps an APNs payload small).
public enum JSONWriter {
    public static func bytes(_ value: JSONValue) -> [UInt8] {
        var out = Output(capacity: 1024)
        write(value, into: &out)
        return out.bytes
    }

    public static func string(_ value: JSONValue) -> String {
        var out = Output(capacity: 256)
        write(value, into: &out)
        return out.text
    }

    /// What a document is written into: bytes of its own, grown by doubling. An array appended
    /// to checked its uniqueness and capacity, and went through a generic `append(contentsOf:)`,
    /// at each of the hundred-odd pieces of a payload, which is written again for every
    /// notification the service or the relay enriches.
    struct Output: ~Copyable {
        private var base: UnsafeMutablePointer<UInt8>
        private(set) var count = 0
        private var capacity: Int

        init(capacity: Int) {
            self.capacity = max(16, capacity)
            base = .allocate(capacity: self.capacity)
        }

        deinit { base.deallocate() }

        /// What was written, as an array of its own.
        var bytes: [UInt8] { Array(UnsafeBufferPointer(start: base, count: count)) }

        /// What was written, as a string (copied once, not through an array).
        var text: String { String(decoding: UnsafeBufferPointer(start: base, count: count), as: UTF8.self) }

        @inline(__always)
        mutating func append(_ byte: UInt8) {
            if count == capacity { grow(by: 1) }
            base[count] = byte
            count &+= 1
        }

        @inline(__always)
        mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) {
            guard let from = bytes.baseAddress else { return }
            if bytes.count > capacity &- count { grow(by: bytes.count) }
            (base + count).update(from: from, count: bytes.count)
            count &+= bytes.count
        }

        mutating func append(_ text: StaticString) {
            text.withUTF8Buffer { append($0) }
        }

        /// A string's UTF-8 bytes.
        mutating func append(utf8 s: String) {
            JSONWriter.withUTF8(of: s) { append($0) }
        }

        private mutating func grow(by needed: Int) {
            let larger = max(capacity * 2, count + needed)
            let moved = UnsafeMutablePointer<UInt8>.allocate(capacity: larger)
            moved.update(from: base, count: count)
            base.deallocate()
            base = moved
            capacity = larger
        }
    }

    static func write(_ value: JSONValue, into out: inout Output) {
        switch value {
        case .null: out.append("null")
        case .bool(let b): out.append(b ? "true" : "false")
        case .number(let n): out.append(utf8: n)
        case .string(let s): writeString(s, into: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            var first = true
            for item in items {
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                write(item, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let object):
            out.append(UInt8(ascii: "{"))
            var first = true
            for member in object.members {
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                writeKey(member.key, into: &out)
                write(member.value, into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// An object member's key and its colon.
    static func writeKey(_ key: String, into out: inout Output) {
        writeString(key, into: &out)
        out.append(UInt8(ascii: ":"))
    }

    static func writeString(_ s: String, into out: inout Output) {
        out.append(UInt8(ascii: "\""))
        withUTF8(of: s) { writeEscaped($0, into: &out) }
        out.append(UInt8(ascii: "\""))
    }

    /// `body` with a string's UTF-8 bytes: a native string's read where they are (a copy of `s`
    /// to call `withUTF8` on costs a uniqueness check and a retain per string, and a payload is
    /// 20-odd strings).
    @inline(__always)
    static func withUTF8(of s: String, _ body: (UnsafeBufferPointer<UInt8>) -> Void) {
        if s.utf8.withContiguousStorageIfAvailable(body) != nil { return }
        var copy = s
        copy.withUTF8(body)
    }

    /// Runs that need no escape (nearly every string) go in whole: a payload is written again for
    /// every notification the relay or the service enriches, and a byte at a time cost more than
    /// the rest of writing it.
    private static func writeEscaped(_ bytes: UnsafeBufferPointer<UInt8>, into out: inout Output) {
        guard needsEscape(bytes) else {
            out.append(bytes)
            return
        }
        var start = 0
        for (i, b) in bytes.enumerated() where escaped(b) {
            out.append(UnsafeBufferPointer(rebasing: bytes[start..<i]))
            start = i + 1
            out.append(0x5c)
            switch b {
            case 0x22: out.append(0x22)
            case 0x5c: out.append(0x5c)
            case 0x0a: out.append(UInt8(ascii: "n"))
            case 0x0d: out.append(UInt8(ascii: "r"))
            case 0x09: out.append(UInt8(ascii: "t"))
            default:
                out.append("u00")
                out.append(hex[Int(b >> 4)])
                out.append(hex[Int(b & 15)])
            }
        }
        out.append(UnsafeBufferPointer(rebasing: bytes[start...]))
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
