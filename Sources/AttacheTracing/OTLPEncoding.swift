import Tracing

/// Spans as an OTLP `ExportTraceServiceRequest` (opentelemetry-proto's
/// `collector/trace/v1/trace_service.proto`), written field by field in protocol buffers' wire
/// format: one resource, one instrumentation scope, the spans. A generic message library walks a
/// generated tree per span; this writes the bytes the tree would.
enum OTLPEncoding {
    static func request(_ spans: [SpanRecord], resource: [(String, String)], scope: (name: String, version: String)) -> [UInt8] {
        var request = ProtobufWriter(capacity: 512 * spans.count + 256)
        request.message(1) { resourceSpans in
            resourceSpans.message(1) { r in
                for (key, value) in resource { r.message(1) { keyValue(key, .string(value), into: &$0) } }
            }
            resourceSpans.message(2) { scopeSpans in
                scopeSpans.message(1) { s in
                    s.string(1, scope.name)
                    s.string(2, scope.version)
                }
                for span in spans { scopeSpans.message(2) { write(span, into: &$0) } }
            }
        }
        return request.bytes
    }

    private static func write(_ span: SpanRecord, into s: inout ProtobufWriter) {
        s.identifier(1, span.trace.traceHigh, span.trace.traceLow)
        s.identifier(2, span.trace.spanID)
        if let state = span.trace.traceState { s.string(3, state) }
        if let parent = span.parentSpanID { s.identifier(4, parent) }
        s.string(5, span.name)
        s.varint(6, kind(span.kind))
        s.fixed64(7, span.start)
        s.fixed64(8, span.end)
        span.attributes.forEach { key, value in s.message(9) { keyValue(key, value, into: &$0) } }
        for event in span.events {
            s.message(11) { e in
                e.fixed64(1, event.nanosecondsSinceEpoch)
                e.string(2, event.name)
                event.attributes.forEach { key, value in e.message(3) { keyValue(key, value, into: &$0) } }
            }
        }
        for link in span.links {
            guard let linked = link.context.traceContext else { continue }
            s.message(13) { l in
                l.identifier(1, linked.traceHigh, linked.traceLow)
                l.identifier(2, linked.spanID)
                if let state = linked.traceState { l.string(3, state) }
                link.attributes.forEach { key, value in l.message(4) { keyValue(key, value, into: &$0) } }
            }
        }
        if let status = span.status {
            s.message(15) { st in
                if let message = status.message { st.string(2, message) }
                st.varint(3, status.code == .ok ? 1 : 2)
            }
        }
        // Bit 8: whether the parent is remote is known; bit 9: it is.
        if span.parentSpanID != nil { s.fixed32(16, 0x100 | (span.parentIsRemote ? 0x200 : 0) | (span.trace.sampled ? 1 : 0)) }
    }

    private static func kind(_ kind: SpanKind) -> UInt64 {
        switch kind {
        case .internal: 1
        case .server: 2
        case .client: 3
        case .producer: 4
        case .consumer: 5
        }
    }

    private static func keyValue(_ key: String, _ value: SpanAttribute, into kv: inout ProtobufWriter) {
        kv.string(1, key)
        kv.message(2) { anyValue(value, into: &$0) }
    }

    /// An `AnyValue`; arrays as an `ArrayValue` of them.
    private static func anyValue(_ value: SpanAttribute, into v: inout ProtobufWriter) {
        func array<T>(_ items: [T], _ each: (T, inout ProtobufWriter) -> Void) {
            v.message(5) { a in for item in items { a.message(1) { each(item, &$0) } } }
        }
        switch value {
        case .string(let s): v.string(1, s)
        case .bool(let b): v.varint(2, b ? 1 : 0)
        case .int32(let i): v.varint(3, UInt64(bitPattern: Int64(i)))
        case .int64(let i): v.varint(3, UInt64(bitPattern: i))
        case .double(let d): v.fixed64(4, d.bitPattern)
        case .stringArray(let items): array(items) { $1.string(1, $0) }
        case .boolArray(let items): array(items) { $1.varint(2, $0 ? 1 : 0) }
        case .int32Array(let items): array(items) { $1.varint(3, UInt64(bitPattern: Int64($0))) }
        case .int64Array(let items): array(items) { $1.varint(3, UInt64(bitPattern: $0)) }
        case .doubleArray(let items): array(items) { $1.fixed64(4, $0.bitPattern) }
        case .stringConvertibleArray(let items): array(items) { $1.string(1, $0.description) }
        case .stringConvertible(let item): v.string(1, item.description)
        default: v.string(1, "\(value)")
        }
    }
}

/// Protocol buffers' wire format, forward only, in one buffer: a nested message is written in
/// place and its length put in front of it once it is known.
struct ProtobufWriter {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 0) {
        bytes.reserveCapacity(capacity)
    }

    mutating func varint(_ field: Int, _ value: UInt64) {
        key(field, 0)
        raw(value)
    }

    mutating func fixed64(_ field: Int, _ value: UInt64) {
        key(field, 1)
        for i in 0..<8 { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(i)))) }
    }

    mutating func fixed32(_ field: Int, _ value: UInt32) {
        key(field, 5)
        for i in 0..<4 { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * UInt32(i)))) }
    }

    /// A trace id (`high`, `low`) or a span id (`high` alone) as bytes, most significant first.
    mutating func identifier(_ field: Int, _ high: UInt64, _ low: UInt64? = nil) {
        key(field, 2)
        raw(low == nil ? 8 : 16)
        bigEndian(high)
        if let low { bigEndian(low) }
    }

    private mutating func bigEndian(_ word: UInt64) {
        for i in 0..<8 { bytes.append(UInt8(truncatingIfNeeded: word >> (56 - 8 * UInt64(i)))) }
    }

    mutating func string(_ field: Int, _ value: String) {
        key(field, 2)
        raw(UInt64(value.utf8.count))
        bytes.append(contentsOf: value.utf8)
    }

    mutating func message(_ field: Int, _ body: (inout ProtobufWriter) -> Void) {
        key(field, 2)
        let start = bytes.count
        body(&self)
        var length = UInt64(bytes.count - start)
        guard length >= 0x80 else { return bytes.insert(UInt8(length), at: start) }
        var prefix: [UInt8] = []
        while length >= 0x80 {
            prefix.append(UInt8(truncatingIfNeeded: length) | 0x80)
            length >>= 7
        }
        prefix.append(UInt8(length))
        bytes.insert(contentsOf: prefix, at: start)
    }

    private mutating func key(_ field: Int, _ wireType: UInt64) { raw(UInt64(field) << 3 | wireType) }

    private mutating func raw(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }
}
