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
        var s = s
        out.append(UInt8(ascii: "\""))
        // Runs that need no escape (nearly every string) go in whole: a payload is written
        // again for every notification the relay or the service enriches, and a byte at a time
        // cost more than the rest of writing it.
        s.withUTF8 { bytes in
            guard bytes.contains(where: { $0 == 0x22 || $0 == 0x5c || $0 < 0x20 }) else {
                out.append(contentsOf: bytes)
                return
            }
            var start = 0
            for (i, b) in bytes.enumerated() where b == 0x22 || b == 0x5c || b < 0x20 {
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
        out.append(UInt8(ascii: "\""))
    }

    private static let hex = Array("0123456789abcdef".utf8)
}
