import NIOCore
import Tracing

/// Spans as an OTLP `ExportTraceServiceRequest` (opentelemetry-proto's
/// `collector/trace/v1/trace_service.proto`), written field by field in protocol buffers' wire
/// format: one resource, one instrumentation scope, the spans. A generic message library walks a
/// generated tree per span; this writes the bytes the tree would.
enum OTLPEncoding {
    /// What goes before a batch's spans in every request: the resource's and the scope's
    /// messages, and the room the request's front takes at most (`SpanBuffer` keeps that much
    /// free before a batch's spans, so a request is made without copying them).
    struct Head: Sendable {
        let resource: [UInt8]
        let scope: [UInt8]
        /// Two keys of a byte and two lengths of at most 10.
        var room: Int { resource.count + scope.count + 22 }

        init(resource attributes: [(String, String)], scope: (name: String, version: String)) {
            var r = ProtobufWriter()  // ResourceSpans.resource
            r.message(1) { r in
                for (key, value) in attributes { r.keyValue(1, SpanField(key, .string(value))) }
            }
            var s = ProtobufWriter()  // ScopeSpans.scope
            s.message(1) { s in
                s.string(1, scope.name)
                s.string(2, scope.version)
            }
            resource = r.bytes
            self.scope = s.bytes
        }
    }

    /// The spans `SpanBuffer` wrote (each a `ScopeSpans.spans` field) made a request: its front
    /// is written into the room kept before them, or, where there is none, the spans are copied
    /// behind it. In place, since a buffer another holds too would be copied whole to be written.
    static func request(_ spans: inout ByteBuffer, head: Head) {
        let scopeSpans = head.scope.count + spans.readableBytes
        let resourceSpans = head.resource.count + ProtobufWriter.headerSize(2, length: scopeSpans) + scopeSpans
        var front = ProtobufWriter(capacity: head.room)
        front.header(1, length: resourceSpans)  // ExportTraceServiceRequest.resource_spans
        head.resource.withUnsafeBytes { front.raw($0) }
        front.header(2, length: scopeSpans)  // ResourceSpans.scope_spans
        head.scope.withUnsafeBytes { front.raw($0) }
        guard front.count <= spans.readerIndex else {
            var request = ByteBuffer()
            request.reserveCapacity(front.count + spans.readableBytes)
            front.withBytes { _ = request.writeBytes($0) }
            request.writeImmutableBuffer(spans)
            spans = request
            return
        }
        spans.moveReaderIndex(to: spans.readerIndex - front.count)
        front.withBytes { _ = spans.setBytes($0, at: spans.readerIndex) }
    }

    /// A span as a `ScopeSpans.spans` field: its ids, name (`name`, then a space and
    /// `nameDetail` when there is one), kind and times, then what `body` writes (attributes,
    /// events, links), then its status and flags.
    static func span(_ name: String, nameDetail: String? = nil, kind: SpanKind, trace: TraceContext, parentSpanID: UInt64?,
                     parentIsRemote: Bool, start: UInt64, end: UInt64, status: SpanStatus?, into writer: inout ProtobufWriter,
                     body: (inout ProtobufWriter) -> Void) {
        writer.message(2) { s in
            s.identifier(1, trace.traceHigh, trace.traceLow)
            s.identifier(2, trace.spanID)
            if let state = trace.traceState { s.string(3, state) }
            if let parentSpanID { s.identifier(4, parentSpanID) }
            if let nameDetail { s.string(5, name, nameDetail) } else { s.string(5, name) }
            s.varint(6, number(kind))
            s.fixed64(7, start)
            s.fixed64(8, end)
            body(&s)
            if let status {
                s.message(15) { st in
                    if let message = status.message { st.string(2, message) }
                    st.varint(3, status.code == .ok ? 1 : 2)
                }
            }
            // Bit 8: whether the parent is remote is known; bit 9: it is.
            if parentSpanID != nil { s.fixed32(16, 0x100 | (parentIsRemote ? 0x200 : 0) | (trace.sampled ? 1 : 0)) }
        }
    }

    /// An ended `RecordedSpan`, as `span` writes one.
    static func write(_ record: SpanRecord, into writer: inout ProtobufWriter) {
        span(record.name, kind: record.kind, trace: record.trace, parentSpanID: record.parentSpanID, parentIsRemote: record.parentIsRemote,
             start: record.start, end: record.end, status: record.status, into: &writer) { s in
            for field in record.attributes { s.keyValue(9, field) }
            for event in record.events {
                s.message(11) { e in
                    e.fixed64(1, event.time)
                    e.string(2, event.name)
                    for field in event.attributes { e.keyValue(3, field) }
                }
            }
            for link in record.links {
                s.message(13) { l in
                    l.identifier(1, link.trace.traceHigh, link.trace.traceLow)
                    l.identifier(2, link.trace.spanID)
                    if let state = link.trace.traceState { l.string(3, state) }
                    for field in link.attributes { l.keyValue(4, field) }
                }
            }
        }
    }

    private static func number(_ kind: SpanKind) -> UInt64 {
        switch kind {
        case .internal: 1
        case .server: 2
        case .client: 3
        case .producer: 4
        case .consumer: 5
        }
    }
}

extension ProtobufWriter {
    /// An OTLP `KeyValue` as field `field`. A string, integer, boolean or double value has a
    /// length known before it is written, so the attribute is written at once, no room kept for
    /// a length; an array is written as nested messages.
    mutating func keyValue(_ field: Int, _ attribute: SpanField) {
        var key = attribute.key
        key.withUTF8 { key in
            switch attribute.value {
            case .string(let s): pair(field, key, s)
            case .int(let i): pair(field, key, i)
            case .bool(let b):
                pair(field, key, value: 2) { Self.put(2 << 3, at: $0) + Self.put(b ? 1 : 0, at: $0 + 1) }
            case .double(let d):
                pair(field, key, value: 9) { p in
                    UnsafeMutableRawPointer(p + Self.put(4 << 3 | 1, at: p)).storeBytes(of: d.bitPattern.littleEndian, as: UInt64.self)
                    return 9
                }
            case .array:
                message(field) { kv in
                    kv.string(1, attribute.key)
                    kv.message(2) { $0.anyValue(attribute.value) }
                }
            }
        }
    }

    /// A string attribute of the span being written (`OTLPEncoding.span`'s body); nil: none.
    public mutating func attribute(_ key: StaticString, _ value: String?) {
        guard let value else { return }
        key.withUTF8Buffer { pair(9, $0, value) }
    }

    /// An integer attribute of the span being written; nil: none.
    public mutating func attribute(_ key: StaticString, _ value: Int?) {
        guard let value else { return }
        key.withUTF8Buffer { pair(9, $0, Int64(value)) }
    }

    /// Attributes written once before (`EncodedAttributes`), as they were written.
    public mutating func attributes(_ encoded: EncodedAttributes) {
        encoded.bytes.withUnsafeBytes { raw($0) }
    }

    /// A string attribute whose key is not a literal.
    public mutating func attribute(named key: String, _ value: String) {
        var key = key
        key.withUTF8 { pair(9, $0, value) }
    }

    private mutating func pair(_ field: Int, _ key: UnsafeBufferPointer<UInt8>, _ s: String) {
        // A native string's bytes are read where they are, the string borrowed, not copied.
        // Spelt here, not through a helper shared with `string(_:_:)`: behind one, the UTF-8
        // writer below was no longer inlined (230 more instructions a traced relay request).
        if s.utf8.withContiguousStorageIfAvailable({ pair(field, key, utf8: $0) }) != nil { return }
        var s = s
        s.withUTF8 { pair(field, key, utf8: $0) }
    }

    private mutating func pair(_ field: Int, _ key: UnsafeBufferPointer<UInt8>, utf8: UnsafeBufferPointer<UInt8>) {
        pair(field, key, value: 1 + Self.size(UInt64(utf8.count)) + utf8.count) { p in
            let n = Self.put(1 << 3 | 2, at: p) + Self.put(UInt64(utf8.count), at: p + 1)
            return n + Self.copy(utf8, to: p + n)
        }
    }

    private mutating func pair(_ field: Int, _ key: UnsafeBufferPointer<UInt8>, _ i: Int64) {
        let bits = UInt64(bitPattern: i)
        pair(field, key, value: 1 + Self.size(bits)) { Self.put(3 << 3, at: $0) + Self.put(bits, at: $0 + 1) }
    }

    /// A KeyValue whose AnyValue takes `value` bytes, which `write` writes at the pointer it is
    /// given (the field's key first) and counts.
    @inline(__always)
    private mutating func pair(_ field: Int, _ key: UnsafeBufferPointer<UInt8>, value: Int, _ write: (UnsafeMutablePointer<UInt8>) -> Int) {
        // Nearly every attribute is short enough that each of its lengths takes one byte: those
        // are written without working out their widths.
        if key.count + value < 124, field < 16 {
            let pair = 4 &+ key.count &+ value
            let p = room(2 &+ pair)
            p[0] = UInt8(truncatingIfNeeded: field << 3 | 2)
            p[1] = UInt8(truncatingIfNeeded: pair)
            p[2] = 1 << 3 | 2
            p[3] = UInt8(truncatingIfNeeded: key.count)
            if let bytes = key.baseAddress { (p + 4).update(from: bytes, count: key.count) }
            p[4 &+ key.count] = 2 << 3 | 2
            p[5 &+ key.count] = UInt8(truncatingIfNeeded: value)
            count &+= 6 &+ key.count &+ write(p + (6 &+ key.count))
            return
        }
        let pair = 1 + Self.size(UInt64(key.count)) + key.count + 1 + Self.size(UInt64(value)) + value
        let p = room(10 + Self.size(UInt64(pair)) + pair)
        var n = Self.put(UInt64(field) << 3 | 2, at: p)
        n += Self.put(UInt64(pair), at: p + n)
        n += Self.put(1 << 3 | 2, at: p + n)
        n += Self.put(UInt64(key.count), at: p + n)
        if let bytes = key.baseAddress { (p + n).update(from: bytes, count: key.count) }
        n += key.count
        n += Self.put(2 << 3 | 2, at: p + n)
        n += Self.put(UInt64(value), at: p + n)
        count += n + write(p + n)
    }

    /// An `AnyValue`'s fields; an array as an `ArrayValue` of them.
    private mutating func anyValue(_ value: SpanField.Value) {
        switch value {
        case .string(let s): string(1, s)
        case .bool(let b): varint(2, b ? 1 : 0)
        case .int(let i): varint(3, UInt64(bitPattern: i))
        case .double(let d): fixed64(4, d.bitPattern)
        case .array(let items): message(5) { a in for item in items { a.message(1) { $0.anyValue(item) } } }
        }
    }
}

/// Attributes written once and kept, for spans that carry the same ones again and again (an
/// attachment's URL and its parts, in every payload of a campaign): a span takes them as bytes
/// (`ProtobufWriter.attributes`), not written anew.
public struct EncodedAttributes: Sendable {
    let bytes: [UInt8]

    /// What `write` writes (`ProtobufWriter.attribute`).
    public init(_ write: (inout ProtobufWriter) -> Void) {
        var writer = ProtobufWriter()
        write(&writer)
        bytes = writer.bytes
    }
}

/// Protocol buffers' wire format, forward only, in one buffer of its own: a nested message is
/// written in place after one byte kept for its length, which is set once the message is written
/// (a longer length moves the message up to make room: a span, or the request's outer messages).
/// Each field is written through a pointer into room made for it at once: a `ByteBuffer` or an
/// array checks its storage for every byte, which cost more than the spans' own work. Public for
/// the attributes of a span `AttacheTracer.record` writes, as they are written.
public struct ProtobufWriter: ~Copyable {
    private var base: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    private(set) var count = 0
    /// Whether `base` is this writer's to free: not while it writes into its caller's scratch.
    private var owned: Bool

    init(capacity: Int = 256) {
        self.capacity = max(capacity, 64)
        base = .allocate(capacity: self.capacity)
        owned = true
    }

    /// A writer into `scratch` (memory on its caller's stack) until that is full, then into
    /// memory of its own: a span written and copied out at once costs no allocation.
    init(scratch: UnsafeMutableBufferPointer<UInt8>) {
        base = scratch.baseAddress!
        capacity = scratch.count
        owned = false
    }

    deinit { if owned { base.deallocate() } }

    var buffer: ByteBuffer { ByteBuffer(bytes: UnsafeBufferPointer(start: base, count: count)) }
    var bytes: [UInt8] { Array(UnsafeBufferPointer(start: base, count: count)) }

    func withBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try body(UnsafeRawBufferPointer(start: base, count: count))
    }

    /// Bytes written elsewhere, as they are.
    mutating func raw(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress else { return }
        UnsafeMutableRawPointer(room(bytes.count)).copyMemory(from: source, byteCount: bytes.count)
        count += bytes.count
    }

    /// The key and length of a length-delimited field whose `length` bytes follow (`raw`).
    mutating func header(_ field: Int, length: Int) {
        let p = room(20)
        let n = Self.put(key(field, 2), at: p)
        count += n + Self.put(UInt64(length), at: p + n)
    }

    /// How many bytes `header` writes.
    static func headerSize(_ field: Int, length: Int) -> Int { size(UInt64(field) << 3 | 2) + size(UInt64(length)) }

    mutating func varint(_ field: Int, _ value: UInt64) {
        let p = room(20)
        let n = Self.put(key(field, 0), at: p)
        count += n + Self.put(value, at: p + n)
    }

    mutating func fixed64(_ field: Int, _ value: UInt64) {
        let p = room(18)
        let n = Self.put(key(field, 1), at: p)
        UnsafeMutableRawPointer(p + n).storeBytes(of: value.littleEndian, as: UInt64.self)
        count += n + 8
    }

    mutating func fixed32(_ field: Int, _ value: UInt32) {
        let p = room(14)
        let n = Self.put(key(field, 5), at: p)
        UnsafeMutableRawPointer(p + n).storeBytes(of: value.littleEndian, as: UInt32.self)
        count += n + 4
    }

    /// A trace id (`high`, `low`) or a span id (`high` alone) as bytes, most significant first.
    mutating func identifier(_ field: Int, _ high: UInt64, _ low: UInt64? = nil) {
        let p = room(12 + 16)
        var n = Self.put(key(field, 2), at: p)
        n += Self.put(low == nil ? 8 : 16, at: p + n)
        UnsafeMutableRawPointer(p + n).storeBytes(of: high.bigEndian, as: UInt64.self)
        n += 8
        if let low {
            UnsafeMutableRawPointer(p + n).storeBytes(of: low.bigEndian, as: UInt64.self)
            n += 8
        }
        count += n
    }

    mutating func string(_ field: Int, _ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            let p = room(20 + utf8.count)
            var n = Self.put(key(field, 2), at: p)
            n += Self.put(UInt64(utf8.count), at: p + n)
            count += n + Self.copy(utf8, to: p + n)
        }
    }

    /// `first`, a space and `second` as one string field, not joined into a string first.
    mutating func string(_ field: Int, _ first: String, _ second: String) {
        var (first, second) = (first, second)
        first.withUTF8 { first in
            second.withUTF8 { second in
                let length = first.count + 1 + second.count
                let p = room(20 + length)
                var n = Self.put(key(field, 2), at: p)
                n += Self.put(UInt64(length), at: p + n)
                n += Self.copy(first, to: p + n)
                p[n] = UInt8(ascii: " ")
                count += n + 1 + Self.copy(second, to: p + n + 1)
            }
        }
    }

    @inline(__always)
    mutating func message(_ field: Int, _ body: (inout ProtobufWriter) -> Void) {
        let p = room(11)
        count += Self.put(key(field, 2), at: p)
        let slot = count
        count += 1
        body(&self)
        let length = count - slot - 1
        guard length >= 0x80 else {
            base[slot] = UInt8(length)
            return
        }
        var prefix: (UInt64, UInt64) = (0, 0)
        let width = withUnsafeMutableBytes(of: &prefix) { Self.put(UInt64(length), at: $0.baseAddress!.assumingMemoryBound(to: UInt8.self)) }
        _ = room(width - 1)
        UnsafeMutableRawPointer(base + slot + width).copyMemory(from: base + slot + 1, byteCount: length)
        withUnsafeBytes(of: prefix) { UnsafeMutableRawPointer(base + slot).copyMemory(from: $0.baseAddress!, byteCount: width) }
        count += width - 1
    }

    private func key(_ field: Int, _ wireType: UInt64) -> UInt64 { UInt64(field) << 3 | wireType }

    /// Where the next `bytes` bytes go, the buffer grown (doubled) if they do not fit.
    @inline(__always)
    fileprivate mutating func room(_ bytes: Int) -> UnsafeMutablePointer<UInt8> {
        if count + bytes > capacity { grow(to: count + bytes) }
        return base + count
    }

    private mutating func grow(to needed: Int) {
        capacity = max(2 * capacity, needed)
        let grown = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
        grown.update(from: base, count: count)
        if owned { base.deallocate() }
        base = grown
        owned = true
    }

    /// `utf8` at `p`; how many bytes it took. A string's bytes come through its `withUTF8`, which
    /// gives a native string's storage itself: copying through its UTF-8 view's iterator or span
    /// took more than the rest of writing an attribute.
    @inline(__always)
    fileprivate static func copy(_ utf8: UnsafeBufferPointer<UInt8>, to p: UnsafeMutablePointer<UInt8>) -> Int {
        if let bytes = utf8.baseAddress { p.update(from: bytes, count: utf8.count) }
        return utf8.count
    }

    /// How many bytes `value` takes as a varint.
    fileprivate static func size(_ value: UInt64) -> Int {
        (64 - value.leadingZeroBitCount + 6) / 7 | (value == 0 ? 1 : 0)
    }

    /// `value` as a varint at `p`; how many bytes it took (at most 10).
    @inline(__always)
    fileprivate static func put(_ value: UInt64, at p: UnsafeMutablePointer<UInt8>) -> Int {
        var value = value
        var n = 0
        while value >= 0x80 {
            p[n] = UInt8(truncatingIfNeeded: value) | 0x80
            value >>= 7
            n += 1
        }
        p[n] = UInt8(value)
        return n + 1
    }
}
