import NIOCore
import NIOHPACK

/// A header field as the relay holds it: a lower-case name and its value. A struct, not a tuple:
/// an array of tuples is destroyed through the runtime's generic tuple witness, field by field,
/// which on a relayed request cost more than its header check.
public struct HeaderField: Sendable, Equatable {
    public var name: String
    public var value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

extension [HeaderField] {
    /// The first value of the field `name` (lower case).
    func first(_ name: String) -> String? {
        first { $0.name == name }?.value
    }
}

/// A few field names, asked about for every field of every relayed request and answer: kept by
/// length, so a name is compared only with those as long as it, and never hashed.
struct FieldNames: Sendable {
    private let byLength: [[String]]

    init(_ names: [String]) {
        var byLength = [[String]](repeating: [], count: (names.map(\.utf8.count).max() ?? 0) + 1)
        for name in names { byLength[name.utf8.count].append(name) }
        self.byLength = byLength
    }

    func contains(_ name: String) -> Bool {
        let length = name.utf8.count
        return length < byLength.count && byLength[length].contains(name)
    }
}

extension RelayRequest {
    /// A request read from its HEADERS frame and checked as RFC 9113 § 8.2 and § 8.3 ask, in the
    /// one pass that reads it: the pseudo-header fields first, each known, once, those a request
    /// must have present (`:method` and `:authority` alone for CONNECT); every name a lower-case
    /// token; no connection-specific field, `te` only as `trailers`; no NUL, CR or LF in a value,
    /// nor a space or control byte in a pseudo-header's. Nil: a malformed request, whose stream is
    /// reset (PROTOCOL_ERROR).
    ///
    /// The same rules NIO's HTTP/2 applies when its header validation is on (it is off on the
    /// relay's connections), and its `content-length` read for `RelayStreams` to hold the body to,
    /// as NIO's content-length validation would (also off). Its check builds a substring and walks each name and value again per
    /// field; on a passthrough request it cost more than a tenth of the relay's instructions.
    init?(validating headers: HPACKHeaders, loop: (any EventLoop)?) {
        self.init(method: "", path: "", fields: [], body: ByteBuffer(), loop: loop)
        fields.reserveCapacity(headers.count)
        var seen = Pseudo()
        for (name, value, _) in headers {
            if name.utf8.first == UInt8(ascii: ":") {
                guard fields.isEmpty, let pseudo = Pseudo(name), !seen.contains(pseudo), Self.isPseudoValue(value) else { return nil }
                seen.insert(pseudo)
                switch pseudo {
                case .method: method = value
                case .path:
                    guard !value.isEmpty else { return nil }
                    path = value
                default: break
                }
            } else {
                guard Self.isName(name), Self.isValue(value), !Self.isForbidden(name, value) else { return nil }
                if name.utf8.count == 14, name == "content-length" {
                    // Digits alone; a repeated field says the same.
                    guard let length = Self.length(value), declaredLength.map({ $0 == length }) ?? true else { return nil }
                    declaredLength = length
                }
                append(HeaderField(name: name, value: value))
            }
        }
        let (mandatory, allowed): (Pseudo, Pseudo) = method == "CONNECT" ? ([.method, .authority], [.method, .authority])
            : ([.method, .scheme, .path], [.method, .scheme, .path, .authority])
        guard seen.isSuperset(of: mandatory), allowed.isSuperset(of: seen) else { return nil }
    }

    /// The pseudo-header fields of a request (`:protocol`, of extended CONNECT, is not offered).
    private struct Pseudo: OptionSet {
        var rawValue: UInt8
        static let method = Pseudo(rawValue: 1)
        static let scheme = Pseudo(rawValue: 2)
        static let path = Pseudo(rawValue: 4)
        static let authority = Pseudo(rawValue: 8)

        init(rawValue: UInt8) {
            self.rawValue = rawValue
        }

        init?(_ name: String) {
            switch name {
            case ":method": self = .method
            case ":scheme": self = .scheme
            case ":path": self = .path
            case ":authority": self = .authority
            default: return nil
            }
        }
    }

    /// A `content-length` value: decimal digits, nothing else.
    static func length(_ value: String) -> Int? {
        guard !value.isEmpty, value.utf8.count <= 18, value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int(value)
    }

    /// A connection-specific field (RFC 9113 § 8.2.2), or `te` other than `trailers`. Dispatched
    /// on the first byte: most fields are compared with none of the names.
    private static func isForbidden(_ name: String, _ value: String) -> Bool {
        switch name.utf8.first {
        case UInt8(ascii: "c"): name == "connection"
        case UInt8(ascii: "t"): name == "te" ? value != "trailers" : name == "transfer-encoding"
        case UInt8(ascii: "p"): name == "proxy-connection"
        case UInt8(ascii: "k"): name == "keep-alive"
        case UInt8(ascii: "u"): name == "upgrade"
        default: false
        }
    }

    /// A field name: one or more of RFC 9110's `tchar`, upper-case letters excepted (HTTP/2 sends
    /// names in lower case).
    static func isName(_ name: String) -> Bool {
        !name.isEmpty && bytes(of: name) { $0.allSatisfy(isToken) }
    }

    private static func isToken(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x21, 0x23...0x27, 0x2A, 0x2B, 0x2D, 0x2E, 0x30...0x39, 0x5E...0x7A, 0x7C, 0x7E: true
        default: false
        }
    }

    /// A field value: no NUL, LF or CR anywhere (RFC 9113 § 8.2.1).
    static func isValue(_ value: String) -> Bool {
        bytes(of: value) { !$0.contains { $0 == 0x00 || $0 == 0x0A || $0 == 0x0D } }
    }

    /// A pseudo-header's value: none of its grammars admits a space or a control byte.
    static func isPseudoValue(_ value: String) -> Bool {
        bytes(of: value) { !$0.contains { $0 <= 0x20 || $0 == 0x7F } }
    }

    /// `check` of the text's UTF-8 bytes, as one buffer (a decoded field's string is native and
    /// contiguous: a plain loop over memory, not the string's iterator).
    private static func bytes(of text: String, _ check: (UnsafeBufferPointer<UInt8>) -> Bool) -> Bool {
        text.utf8.withContiguousStorageIfAvailable(check) ?? Array(text.utf8).withUnsafeBufferPointer(check)
    }
}
