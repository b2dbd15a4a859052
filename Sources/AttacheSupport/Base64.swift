/// Standard base64 (RFC 4648, with padding), for the few bytes that go into payloads as text:
/// written here rather than pulling Foundation into the commands that start per payload.
public enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        let input = Array(bytes)
        var out: [UInt8] = []
        out.reserveCapacity((input.count + 2) / 3 * 4)
        var i = 0
        while i < input.count {
            let b0 = Int(input[i]), b1 = i + 1 < input.count ? Int(input[i + 1]) : 0, b2 = i + 2 < input.count ? Int(input[i + 2]) : 0
            out.append(alphabet[b0 >> 2])
            out.append(alphabet[(b0 & 3) << 4 | b1 >> 4])
            out.append(i + 1 < input.count ? alphabet[(b1 & 15) << 2 | b2 >> 6] : UInt8(ascii: "="))
            out.append(i + 2 < input.count ? alphabet[b2 & 63] : UInt8(ascii: "="))
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Base64url without padding (RFC 7515), as JSON Web Tokens are written.
    public static func urlEncode(_ bytes: some Collection<UInt8>) -> String {
        String(encode(bytes).compactMap { c -> Character? in
            switch c {
            case "+": "-"
            case "/": "_"
            case "=": nil
            default: c
            }
        })
    }

    /// Standard or url-safe base64, padded or not, back to bytes; nil for anything else.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var bits = 0
        var count = 0
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count * 3 / 4)
        for c in text.utf8 {
            let value: Int
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = Int(c) - 65
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = Int(c) - 71
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = Int(c) + 4
            case UInt8(ascii: "+"), UInt8(ascii: "-"): value = 62
            case UInt8(ascii: "/"), UInt8(ascii: "_"): value = 63
            case UInt8(ascii: "="): continue
            default: return nil
            }
            bits = bits << 6 | value
            count += 6
            if count >= 8 {
                count -= 8
                out.append(UInt8(truncatingIfNeeded: bits >> count))
                bits &= (1 << count) - 1
            }
        }
        return count >= 6 ? nil : out
    }
}
