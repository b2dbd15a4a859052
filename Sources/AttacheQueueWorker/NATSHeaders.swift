/// A NATS message's headers, read from the header block as it arrived (`NATS/1.0`, then `Name:
/// value` lines, then an empty line): every value as sent, an empty one included, repeated names
/// in order. Values lose the spaces and tabs around them and nothing else (a no-break space
/// stays, so `"5\u{a0}"` is not `5`); a line starting with a blank continues the value before it.
public struct NATSHeaders: Sendable, Equatable {
    public struct Field: Sendable, Equatable {
        public var name: String
        public var value: String
    }

    public private(set) var fields: [Field]

    public init(_ fields: [Field] = []) {
        self.fields = fields
    }

    /// Nil when the block does not start with `NATS/1.0`.
    public init?(block: some Collection<UInt8>) {
        let lines = Array(block).split(separator: 0x0A, omittingEmptySubsequences: false).map { line in
            line.last == 0x0D ? line.dropLast() : line[...]
        }
        guard let first = lines.first, first.starts(with: Array("NATS/1.0".utf8)) else { return nil }
        var fields: [Field] = []
        for line in lines.dropFirst() {
            if line.isEmpty { break }
            if Self.isBlank(line.first!) {
                // A folded line: more of the value before it.
                guard !fields.isEmpty else { continue }
                let more = Self.trimmed(line)
                if !more.isEmpty {
                    fields[fields.count - 1].value += (fields[fields.count - 1].value.isEmpty ? "" : " ") + String(decoding: more, as: UTF8.self)
                }
                continue
            }
            // A line without a colon is not a header; it is skipped, not taken for one.
            guard let colon = line.firstIndex(of: 0x3A) else { continue }
            let name = Self.trimmed(line[..<colon])
            guard !name.isEmpty else { continue }
            fields.append(Field(name: String(decoding: name, as: UTF8.self),
                                value: String(decoding: Self.trimmed(line[line.index(after: colon)...]), as: UTF8.self)))
        }
        self.fields = fields
    }

    /// The first value of `name`: its exact spelling first, then any other case (as HTTP reads names).
    public func first(_ name: String) -> String? {
        values(name).first
    }

    /// Every value of `name`, in the order sent.
    public func values(_ name: String) -> [String] {
        let exact = fields.filter { $0.name == name }
        if !exact.isEmpty { return exact.map(\.value) }
        let lower = name.lowercased()
        return fields.filter { $0.name.lowercased() == lower }.map(\.value)
    }

    private static func isBlank(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }

    private static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        guard let start = bytes.firstIndex(where: { !isBlank($0) }), let end = bytes.lastIndex(where: { !isBlank($0) }) else { return [] }
        return bytes[start...end]
    }
}
