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
/// ends sampled, is kept in a bounded buffer for the exporter (`SpanExporter`), with no task, stream
/// or protocol buffer message made for it. Context travels as W3C Trace Context (`traceparent`,
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
        let parent = context.traceContext
        let (high, low) = parent.map { ($0.traceHigh, $0.traceLow) } ?? (ids.next(), ids.next())
        let own = TraceContext(traceHigh: high, traceLow: low, spanID: ids.next(),
                               sampled: sampler.samples(traceLow: low, parent: parent), traceState: parent?.traceState)
        context.traceContext = own
        return RecordedSpan(operationName, kind: kind, context: context, parent: parent, start: instant().nanosecondsSinceEpoch,
                            buffer: own.sampled ? buffer : nil)
    }

    public func forceFlush() { buffer.wake() }

    public func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract)
    where Extract.Carrier == Carrier {
        guard let field = extractor.extract(key: "traceparent", from: carrier), var parent = TraceContext(traceparent: field) else { return }
        parent.traceState = extractor.extract(key: "tracestate", from: carrier).flatMap { $0.isEmpty ? nil : $0 }
        context.traceContext = parent
    }

    public func inject<Carrier, Inject: Injector>(_ context: ServiceContext, into carrier: inout Carrier, using injector: Inject)
    where Inject.Carrier == Carrier {
        guard let trace = context.traceContext else { return }
        injector.inject(trace.traceparent, forKey: "traceparent", into: &carrier)
        if let state = trace.traceState { injector.inject(state, forKey: "tracestate", into: &carrier) }
    }
}

/// What an ended span leaves for the exporter.
struct SpanRecord: Sendable {
    var name: String
    var kind: SpanKind
    var trace: TraceContext
    var parentSpanID: UInt64?
    var parentIsRemote: Bool
    var start: UInt64
    var end: UInt64
    var attributes: SpanAttributes
    var events: [SpanEvent]
    var links: [SpanLink]
    var status: SpanStatus?
}

/// A span of `AttacheTracer`. Not sampled, it keeps nothing and leaves nothing.
public final class RecordedSpan: Tracing.Span, Sendable {
    public let context: ServiceContext
    private let record: Mutex<SpanRecord?>
    private let buffer: SpanBuffer?

    init(_ name: String, kind: SpanKind, context: ServiceContext, parent: TraceContext?, start: UInt64, buffer: SpanBuffer?) {
        self.context = context
        self.buffer = buffer
        record = Mutex(buffer.map { _ in
            SpanRecord(name: name, kind: kind, trace: context.traceContext!, parentSpanID: parent?.spanID, parentIsRemote: parent?.isRemote ?? false,
                       start: start, end: start, attributes: [:], events: [], links: [])
        })
    }

    public var operationName: String {
        get { record.withLock { $0?.name ?? "" } }
        set { record.withLock { $0?.name = newValue } }
    }

    public var attributes: SpanAttributes {
        get { record.withLock { $0?.attributes ?? [:] } }
        set { record.withLock { $0?.attributes = newValue } }
    }

    public var isRecording: Bool { record.withLock { $0 != nil } }

    public func setStatus(_ status: SpanStatus) {
        record.withLock { record in
            // An OK status is final; an error may be set again, unset never.
            if record?.status?.code != .ok { record?.status = status }
        }
    }

    public func addEvent(_ event: SpanEvent) { record.withLock { $0?.events.append(event) } }

    public func addLink(_ link: SpanLink) { record.withLock { $0?.links.append(link) } }

    public func recordError<Instant: TracerInstant>(_ error: any Error, attributes: SpanAttributes, at instant: @autoclosure () -> Instant) {
        guard isRecording else { return }
        var attributes = attributes
        attributes["exception.type"] = "\(type(of: error))"
        attributes["exception.message"] = "\(error)"
        addEvent(SpanEvent(name: "exception", at: instant(), attributes: attributes))
    }

    public func end<Instant: TracerInstant>(at instant: @autoclosure () -> Instant) {
        let ended: SpanRecord? = record.withLock { record in
            guard var ended = record else { return nil }
            record = nil  // ended: nothing more is recorded
            ended.end = max(ended.start, instant().nanosecondsSinceEpoch)
            return ended
        }
        if let ended { buffer?.append(ended) }
    }
}
