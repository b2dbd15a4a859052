import Instrumentation
import ServiceContextModule
import Synchronization
import Tracing

/// Which traces are recorded, as `OTEL_TRACES_SAMPLER` names them.
public enum Sampler: Sendable, Equatable {
    case alwaysOn
    case alwaysOff
    /// This share of traces, chosen by their id (so every process of a trace agrees).
    case ratio(Double)
    /// The caller's decision when there is a caller; else the root's.
    indirect case parentBased(root: Sampler)

    func samples(traceLow: UInt64, parent: TraceContext?) -> Bool {
        switch self {
        case .alwaysOn: return true
        case .alwaysOff: return false
        case .ratio(let share):
            // The id's low 56 bits, against the share of their range (as the specification's
            // TraceIdRatioBased sampler reads a random trace id).
            return traceLow & 0x00FF_FFFF_FFFF_FFFF < UInt64(share * 72_057_594_037_927_936)
        case .parentBased(let root):
            if let parent { return parent.sampled }
            return root.samples(traceLow: traceLow, parent: nil)
        }
    }
}

/// A tracer of Attache's own, in place of an SDK's: a span is a small object whose data, once it
/// ends sampled, is written as OTLP into a bounded buffer for the exporter (`SpanExporter`), with
/// no task, stream or message object made for it. Context travels as W3C Trace Context (`traceparent`,
/// `tracestate`), which it reads and writes as the process's instrument.
public final class AttacheTracer: Tracer, Sendable {
    public typealias Span = RecordedSpan

    let sampler: Sampler
    let buffer: SpanBuffer
    let ids = IDGenerator()

    init(sampler: Sampler, buffer: SpanBuffer) {
        self.sampler = sampler
        self.buffer = buffer
    }

    public func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> ServiceContext, ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant, function: String, file fileID: String, line: UInt
    ) -> RecordedSpan {
        var context = context()
        // A span started through swift-distributed-tracing's API inside a request or payload
        // (whose place is `TraceContext.current`, not in `ServiceContext.current`) goes under it.
        let parent = context.traceContext ?? TraceContext.current
        let own = place(under: parent)
        context.traceContext = own
        return RecordedSpan(operationName, kind: kind, context: context, parent: parent, start: instant().nanosecondsSinceEpoch,
                            buffer: own.sampled ? buffer : nil)
    }

    /// A span whose start and end are already known (one made from a report once the work is
    /// done), recorded at once: no span object, `ServiceContext` or list of attributes is made for
    /// it; `attributes` writes them (`ProtobufWriter.attribute`) straight into the span as it is
    /// exported, and runs only when the span is sampled. Returns its place in the trace, the
    /// parent of its children; with `parent` nil it starts a trace. Times in nanoseconds since
    /// the epoch.
    @discardableResult
    public func record(_ name: String, kind: SpanKind, parent: TraceContext?, start: UInt64, end: UInt64, status: SpanStatus? = nil,
                       attributes: (inout ProtobufWriter) -> Void = { _ in }) -> TraceContext {
        let own = place(under: parent)
        record(name, kind: kind, as: own, parent: parent, start: start, end: end, status: status, attributes: attributes)
        return own
    }

    /// `record`, for a span given its place (`place(under:)`) before its work began, so that
    /// its children could name it as their parent while it ran. `nameDetail`: a second word of
    /// its name, after a space (an HTTP server span's route after its method).
    public func record(_ name: String, nameDetail: String? = nil, kind: SpanKind, as own: TraceContext, parent: TraceContext?, start: UInt64,
                       end: UInt64, status: SpanStatus? = nil, attributes: (inout ProtobufWriter) -> Void = { _ in }) {
        guard own.sampled else { return }
        // Written on the stack (a span is a few hundred bytes), then copied into the buffer.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 1024) { scratch in
            var span = ProtobufWriter(scratch: scratch)
            OTLPEncoding.span(name, nameDetail: nameDetail, kind: kind, trace: own, parentSpanID: parent?.spanID,
                              parentIsRemote: parent?.isRemote ?? false, start: start, end: max(start, end), status: status, into: &span,
                              body: attributes)
            buffer.keep(span)
        }
    }

    /// A new span's ids and sampling decision: in its parent's trace, or a new one.
    public func place(under parent: TraceContext?) -> TraceContext {
        guard let parent else {
            let new = ids.trace()
            return TraceContext(traceHigh: new.high, traceLow: new.low, spanID: new.span, sampled: sampler.samples(traceLow: new.low, parent: nil),
                                traceState: nil)
        }
        return TraceContext(traceHigh: parent.traceHigh, traceLow: parent.traceLow, spanID: ids.next(),
                            sampled: sampler.samples(traceLow: parent.traceLow, parent: parent), traceState: parent.traceState)
    }

    public func forceFlush() { buffer.wake() }

    public func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract)
    where Extract.Carrier == Carrier {
        guard let field = extractor.extract(key: "traceparent", from: carrier),
              let parent = Self.caller(traceparent: field, tracestate: extractor.extract(key: "tracestate", from: carrier)) else { return }
        context.traceContext = parent
    }

    /// The caller's place in its trace, from its W3C Trace Context fields; nil without a valid
    /// `traceparent`.
    public static func caller(traceparent: String?, tracestate: String?) -> TraceContext? {
        guard let traceparent, var parent = TraceContext(traceparent: traceparent) else { return nil }
        parent.traceState = tracestate.flatMap { $0.isEmpty ? nil : $0 }
        return parent
    }

    public func inject<Carrier, Inject: Injector>(_ context: ServiceContext, into carrier: inout Carrier, using injector: Inject)
    where Inject.Carrier == Carrier {
        guard let trace = context.traceContext else { return }
        injector.inject(trace.traceparent, forKey: "traceparent", into: &carrier)
        if let state = trace.traceState { injector.inject(state, forKey: "tracestate", into: &carrier) }
    }
}

/// An attribute as a `RecordedSpan` exports it: a key and OpenTelemetry's `AnyValue`.
/// swift-distributed-tracing's `SpanAttributes` (a dictionary of boxed values) is read into a
/// list of these when the span ends.
public struct SpanField: Sendable, Equatable {
    public enum Value: Sendable, Equatable {
        case string(String)
        case int(Int64)
        case double(Double)
        case bool(Bool)
        case array([Value])
    }

    public var key: String
    public var value: Value

    public init(_ key: String, _ value: Value) {
        self.key = key
        self.value = value
    }

    /// Each of `attributes`, in the dictionary's order.
    static func list(_ attributes: SpanAttributes) -> [SpanField] {
        var fields: [SpanField] = []
        attributes.forEach { key, value in fields.append(SpanField(key, Value(value))) }
        return fields
    }
}

extension SpanField.Value {
    init(_ attribute: SpanAttribute) {
        switch attribute {
        case .string(let s): self = .string(s)
        case .bool(let b): self = .bool(b)
        case .int32(let i): self = .int(Int64(i))
        case .int64(let i): self = .int(i)
        case .double(let d): self = .double(d)
        case .stringArray(let items): self = .array(items.map { .string($0) })
        case .boolArray(let items): self = .array(items.map { .bool($0) })
        case .int32Array(let items): self = .array(items.map { .int(Int64($0)) })
        case .int64Array(let items): self = .array(items.map { .int($0) })
        case .doubleArray(let items): self = .array(items.map { .double($0) })
        case .stringConvertibleArray(let items): self = .array(items.map { .string($0.description) })
        case .stringConvertible(let item): self = .string(item.description)
        default: self = .string("\(attribute)")
        }
    }
}

/// What an ended span leaves for the exporter.
struct SpanRecord: Sendable {
    struct Event: Sendable {
        var name: String
        var time: UInt64
        var attributes: [SpanField]
    }

    struct Link: Sendable {
        var trace: TraceContext
        var attributes: [SpanField]
    }

    var name: String
    var kind: SpanKind
    var trace: TraceContext
    var parentSpanID: UInt64?
    var parentIsRemote: Bool
    var start: UInt64
    var end: UInt64
    var attributes: [SpanField]
    var events: [Event] = []
    var links: [Link] = []
    var status: SpanStatus?
}

/// A span of `AttacheTracer`. Not sampled, it keeps nothing and leaves nothing.
public final class RecordedSpan: Tracing.Span, Sendable {
    /// A sampled span until it ends: its record, and the attributes set through the `Span` API.
    private struct Open {
        var record: SpanRecord
        var attributes: SpanAttributes = [:]
    }

    public let context: ServiceContext
    private let open: Mutex<Open?>
    private let buffer: SpanBuffer?

    init(_ name: String, kind: SpanKind, context: ServiceContext, parent: TraceContext?, start: UInt64, buffer: SpanBuffer?) {
        self.context = context
        self.buffer = buffer
        open = Mutex(buffer.map { _ in
            Open(record: SpanRecord(name: name, kind: kind, trace: context.traceContext!, parentSpanID: parent?.spanID,
                                    parentIsRemote: parent?.isRemote ?? false, start: start, end: start, attributes: []))
        })
    }

    public var operationName: String {
        get { open.withLock { $0?.record.name ?? "" } }
        set { open.withLock { $0?.record.name = newValue } }
    }

    public var attributes: SpanAttributes {
        get { open.withLock { $0?.attributes ?? [:] } }
        set { open.withLock { $0?.attributes = newValue } }
    }

    public var isRecording: Bool { open.withLock { $0 != nil } }

    public func setStatus(_ status: SpanStatus) {
        open.withLock { open in
            // An OK status is final; an error may be set again, unset never.
            if open?.record.status?.code != .ok { open?.record.status = status }
        }
    }

    public func addEvent(_ event: SpanEvent) {
        open.withLock {
            $0?.record.events.append(SpanRecord.Event(name: event.name, time: event.nanosecondsSinceEpoch, attributes: SpanField.list(event.attributes)))
        }
    }

    public func addLink(_ link: SpanLink) {
        guard let trace = link.context.traceContext else { return }
        open.withLock { $0?.record.links.append(SpanRecord.Link(trace: trace, attributes: SpanField.list(link.attributes))) }
    }

    public func recordError<Instant: TracerInstant>(_ error: any Error, attributes: SpanAttributes, at instant: @autoclosure () -> Instant) {
        guard isRecording else { return }
        var attributes = attributes
        attributes["exception.type"] = "\(type(of: error))"
        attributes["exception.message"] = "\(error)"
        addEvent(SpanEvent(name: "exception", at: instant(), attributes: attributes))
    }

    public func end<Instant: TracerInstant>(at instant: @autoclosure () -> Instant) {
        // Ended: nothing more is recorded.
        guard let ended = open.withLock({ open -> Open? in defer { open = nil }; return open }) else { return }
        var record = ended.record
        record.end = max(record.start, instant().nanosecondsSinceEpoch)
        record.attributes = SpanField.list(ended.attributes)
        buffer?.append(record)
    }
}
