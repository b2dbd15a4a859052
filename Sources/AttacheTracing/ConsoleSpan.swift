/// Spans as the console exporter prints them, a line each, read back from the OTLP the buffer
/// holds: `span NAME trace=… span=… [parent=…] duration_ms=… key=value …`, the attributes sorted.
/// The console is for a person at a terminal, so reading costs nothing the service pays for.
enum ConsoleSpan {
    static func lines(_ spans: [UInt8]) -> String {
        var text = ""
        for field in ProtobufReader.fields(spans[...]) where field.number == 2 {
            if let span = field.bytes { text += line(span) + "\n" }
        }
        return text
    }

    private static func line(_ span: ArraySlice<UInt8>) -> String {
        var name = "", trace = "", id = "", parent = "", start: UInt64 = 0, end: UInt64 = 0
        var attributes: [String] = []
        for field in ProtobufReader.fields(span) {
            switch (field.number, field.bytes) {
            case (1, let bytes?): trace = hex(bytes)
            case (2, let bytes?): id = hex(bytes)
            case (4, let bytes?): parent = " parent=" + hex(bytes)
            case (5, let bytes?): name = String(decoding: bytes, as: UTF8.self)
            case (7, nil): start = field.value
            case (8, nil): end = field.value
            case (9, let pair?):
                let parts = ProtobufReader.fields(pair)
                let key = parts.first { $0.number == 1 }?.bytes.map { String(decoding: $0, as: UTF8.self) } ?? ""
                let value = parts.first { $0.number == 2 }?.bytes.map(plain) ?? ""
                attributes.append("\(key)=\(value)")
            default: continue
            }
        }
        return "span \(name) trace=\(trace) span=\(id)\(parent) duration_ms=\(Double(end &- start) / 1_000_000) "
            + attributes.sorted().joined(separator: " ")
    }

    /// An `AnyValue`: string 1, bool 2, int 3, double 4, array 5 (of values 1).
    private static func plain(_ any: ArraySlice<UInt8>) -> String {
        guard let value = ProtobufReader.fields(any).first else { return "" }
        switch (value.number, value.bytes) {
        case (1, let bytes?): return String(decoding: bytes, as: UTF8.self)
        case (2, nil): return String(value.value != 0)
        case (3, nil): return String(Int64(bitPattern: value.value))
        case (4, nil): return String(Double(bitPattern: value.value))
        case (5, let items?): return "[" + ProtobufReader.fields(items).compactMap { $0.bytes.map(plain) }.joined(separator: ",") + "]"
        default: return ""
        }
    }

    /// A trace id (16 bytes) or span id (8) as `TraceContext` writes them.
    private static func hex(_ bytes: ArraySlice<UInt8>) -> String {
        stride(from: bytes.startIndex, to: bytes.endIndex, by: 8).map { at in
            TraceContext.hex(bytes[at..<min(at + 8, bytes.endIndex)].reduce(0) { $0 << 8 | UInt64($1) })
        }.joined()
    }
}

/// A protocol buffers message's fields, for reading back what `ProtobufWriter` wrote: a
/// length-delimited field's bytes, any other's value (a fixed-width one little-endian). Reading
/// stops at what is not wire format.
enum ProtobufReader {
    struct Field {
        var number: Int
        var value: UInt64
        var bytes: ArraySlice<UInt8>?
    }

    static func fields(_ data: ArraySlice<UInt8>) -> [Field] {
        var fields: [Field] = []
        var i = data.startIndex
        func varint() -> UInt64? {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while i < data.endIndex, shift < 64 {
                let byte = data[i]
                i += 1
                value |= UInt64(byte & 0x7F) << shift
                shift += 7
                if byte < 0x80 { return value }
            }
            return nil
        }
        func fixed(_ width: Int) -> UInt64? {
            guard data.endIndex - i >= width else { return nil }
            defer { i += width }
            return data[i..<i + width].reversed().reduce(0) { $0 << 8 | UInt64($1) }
        }
        while i < data.endIndex, let key = varint() {
            let number = Int(key >> 3)
            switch key & 7 {
            case 0:
                guard let value = varint() else { return fields }
                fields.append(Field(number: number, value: value))
            case 1:
                guard let value = fixed(8) else { return fields }
                fields.append(Field(number: number, value: value))
            case 5:
                guard let value = fixed(4) else { return fields }
                fields.append(Field(number: number, value: value))
            case 2:
                guard let length = varint(), length <= UInt64(data.endIndex - i) else { return fields }
                fields.append(Field(number: number, value: 0, bytes: data[i..<i + Int(length)]))
                i += Int(length)
            default:
                return fields
            }
        }
        return fields
    }
}
