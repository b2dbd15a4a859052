/// Why input is not a payload. The CLI turns these into one line and exit status 2.
public struct PayloadError: Error, Sendable, Equatable, CustomStringConvertible {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case invalidJSON = "invalid-json"
            case notAnObject = "not-an-object"
            case tooDeep = "too-deep"
            case tooLarge = "too-large"
            case unreadable
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }
        public static let invalidJSON = Code(.invalidJSON)
        public static let notAnObject = Code(.notAnObject)
        public static let tooDeep = Code(.tooDeep)
        public static let tooLarge = Code(.tooLarge)
        /// The input could not be read at all (a batch directory's entry that is not a file).
        public static let unreadable = Code(.unreadable)
        public var description: String { base.rawValue }
    }

    public let code: Code
    public let message: String
    /// Where invalid JSON went wrong: 1-based line and column (columns count characters, not
    /// bytes), as an editor shows them.
    public let location: (line: Int, column: Int)?

    public init(_ code: Code, _ message: String, location: (line: Int, column: Int)? = nil) {
        self.code = code
        self.message = message
        self.location = location
    }

    public static func == (a: PayloadError, b: PayloadError) -> Bool {
        a.code == b.code && a.message == b.message && a.location?.line == b.location?.line && a.location?.column == b.location?.column
    }

    public var description: String { message }
}

/// A strict RFC 8259 parser over bytes, with limits on size and depth.
public struct JSONParser: Sendable {
    public var maxBytes: Int
    public var maxDepth: Int

    public init(maxBytes: Int = 64 * 1024, maxDepth: Int = 64) {
        self.maxBytes = maxBytes
        self.maxDepth = maxDepth
    }

    public func parse(_ bytes: [UInt8]) throws(PayloadError) -> JSONValue {
        guard bytes.count <= maxBytes else {
            throw PayloadError(.tooLarge, "input is \(bytes.count) bytes; the limit is \(maxBytes)")
        }
        var reader = Reader(bytes: bytes, maxDepth: maxDepth)
        reader.skipWhitespace()
        let value = try reader.value(depth: 1)
        reader.skipWhitespace()
        guard reader.position == bytes.count else { throw reader.error("unexpected data after the JSON value") }
        return value
    }

    private struct Reader {
        let bytes: [UInt8]
        let maxDepth: Int
        var position = 0

        init(bytes: [UInt8], maxDepth: Int) {
            self.bytes = bytes
            self.maxDepth = maxDepth
        }

        func error(_ message: String) -> PayloadError {
            let (line, column) = location(of: position)
            return PayloadError(.invalidJSON, "invalid JSON at line \(line), column \(column): \(message)", location: (line, column))
        }

        /// Line and column of a byte offset: a column counts UTF-8 lead bytes since the line began.
        func location(of offset: Int) -> (Int, Int) {
            var line = 1, column = 1
            for b in bytes[..<min(offset, bytes.count)] {
                if b == 0x0a {
                    line += 1
                    column = 1
                } else if b & 0xC0 != 0x80 {
                    column += 1
                }
            }
            return (line, column)
        }

        var peek: UInt8? { position < bytes.count ? bytes[position] : nil }

        mutating func skipWhitespace() {
            while let b = peek, b == 0x20 || b == 0x0a || b == 0x0d || b == 0x09 { position += 1 }
        }

        mutating func expect(_ literal: String) throws(PayloadError) {
            for b in literal.utf8 {
                guard peek == b else { throw error("expected \(literal)") }
                position += 1
            }
        }

        mutating func value(depth: Int) throws(PayloadError) -> JSONValue {
            guard let b = peek else { throw error("unexpected end of input") }
            switch b {
            case UInt8(ascii: "{"):
                guard depth <= maxDepth else { throw PayloadError(.tooDeep, "JSON nested deeper than \(maxDepth) levels") }
                return .object(try object(depth: depth))
            case UInt8(ascii: "["):
                guard depth <= maxDepth else { throw PayloadError(.tooDeep, "JSON nested deeper than \(maxDepth) levels") }
                return .array(try array(depth: depth))
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): try expect("true"); return .bool(true)
            case UInt8(ascii: "f"): try expect("false"); return .bool(false)
            case UInt8(ascii: "n"): try expect("null"); return .null
            default: return .number(try number())
            }
        }

        mutating func object(depth: Int) throws(PayloadError) -> JSONObject {
            position += 1
            var members: [JSONObject.Member] = []
            skipWhitespace()
            if peek == UInt8(ascii: "}") { position += 1; return JSONObject(members) }
            while true {
                skipWhitespace()
                guard peek == UInt8(ascii: "\"") else { throw error("expected a member name") }
                let key = try string()
                skipWhitespace()
                guard peek == UInt8(ascii: ":") else { throw error("expected ':'") }
                position += 1
                skipWhitespace()
                members.append(.init(key: key, value: try value(depth: depth + 1)))
                skipWhitespace()
                switch peek {
                case UInt8(ascii: ","): position += 1
                case UInt8(ascii: "}"): position += 1; return JSONObject(members)
                default: throw error("expected ',' or '}'")
                }
            }
        }

        mutating func array(depth: Int) throws(PayloadError) -> [JSONValue] {
            position += 1
            var items: [JSONValue] = []
            skipWhitespace()
            if peek == UInt8(ascii: "]") { position += 1; return items }
            while true {
                skipWhitespace()
                items.append(try value(depth: depth + 1))
                skipWhitespace()
                switch peek {
                case UInt8(ascii: ","): position += 1
                case UInt8(ascii: "]"): position += 1; return items
                default: throw error("expected ',' or ']'")
                }
            }
        }

        mutating func number() throws(PayloadError) -> String {
            let start = position
            if peek == UInt8(ascii: "-") { position += 1 }
            guard let first = peek, isDigit(first) else { throw error("expected a value") }
            position += 1
            if first != UInt8(ascii: "0") { while let b = peek, isDigit(b) { position += 1 } }
            if peek == UInt8(ascii: ".") {
                position += 1
                guard let b = peek, isDigit(b) else { throw error("expected a digit after '.'") }
                while let b = peek, isDigit(b) { position += 1 }
            }
            if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
                position += 1
                if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { position += 1 }
                guard let b = peek, isDigit(b) else { throw error("expected a digit in the exponent") }
                while let b = peek, isDigit(b) { position += 1 }
            }
            return String(decoding: bytes[start..<position], as: UTF8.self)
        }

        func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

        mutating func string() throws(PayloadError) -> String {
            position += 1
            let start = position
            // Fast path: no escapes (nearly every string of a payload), read straight from the
            // input; ASCII needs no UTF-8 check. A payload is parsed for every notification the
            // relay or the service enriches.
            var bits: UInt8 = 0
            while let b = peek, b != UInt8(ascii: "\""), b != UInt8(ascii: "\\"), b >= 0x20 {
                bits |= b
                position += 1
            }
            if peek == UInt8(ascii: "\"") {
                let run = bytes[start..<position]
                position += 1
                if bits < 0x80 { return String(decoding: run, as: UTF8.self) }
                guard let s = String(validating: run, as: UTF8.self) else { throw error("string is not valid UTF-8") }
                return s
            }
            var out = Array(bytes[start..<position])
            while true {
                guard let b = peek else { throw error("unterminated string") }
                position += 1
                switch b {
                case UInt8(ascii: "\""):
                    guard let s = String(validating: out, as: UTF8.self) else { throw error("string is not valid UTF-8") }
                    return s
                case UInt8(ascii: "\\"):
                    guard let e = peek else { throw error("unterminated escape") }
                    position += 1
                    switch e {
                    case UInt8(ascii: "\""): out.append(0x22)
                    case UInt8(ascii: "\\"): out.append(0x5c)
                    case UInt8(ascii: "/"): out.append(0x2f)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0c)
                    case UInt8(ascii: "n"): out.append(0x0a)
                    case UInt8(ascii: "r"): out.append(0x0d)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "u"):
                        var scalar = try hex4()
                        if (0xD800...0xDBFF).contains(scalar) {
                            guard peek == UInt8(ascii: "\\"), position + 1 < bytes.count, bytes[position + 1] == UInt8(ascii: "u") else {
                                throw error("lone surrogate")
                            }
                            position += 2
                            let low = try hex4()
                            guard (0xDC00...0xDFFF).contains(low) else { throw error("invalid surrogate pair") }
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        } else if (0xDC00...0xDFFF).contains(scalar) {
                            throw error("lone surrogate")
                        }
                        guard let u = Unicode.Scalar(scalar) else { throw error("invalid escape") }
                        out.append(contentsOf: Array(String(Character(u)).utf8))
                    default: throw error("invalid escape")
                    }
                default:
                    guard b >= 0x20 else { throw error("control character in string") }
                    out.append(b)
                }
            }
        }

        mutating func hex4() throws(PayloadError) -> UInt32 {
            guard position + 4 <= bytes.count,
                  let v = UInt32(String(decoding: bytes[position..<position + 4], as: UTF8.self), radix: 16) else {
                throw error("invalid \\u escape")
            }
            position += 4
            return v
        }
    }
}
