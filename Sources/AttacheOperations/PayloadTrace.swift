import Attache
import AttacheFetch
import Synchronization
import Tracing

/// One payload's spans, made from its report once it is answered: a span for the payload (its
/// outcome and reason), under it one per attachment (the URL without its query, the server, the
/// media, the cache event), and under each the stages the report timed — dns, connect, tls,
/// first_byte, download, inspect, render, transcode, store — at the offsets it recorded them. The
/// report already holds every stage's start and length, so the work itself carries no span: with
/// no tracer bootstrapped (`OTEL_*` unset) a payload costs one check, and with one, a few spans
/// made after its answer.
///
/// The parent is the context the door was given the payload in: the HTTP request's (Hummingbird's
/// span, from its `traceparent`), the relay's stream's, the JetStream message's headers.
public struct PayloadTrace: Sendable {
    let parent: ServiceContext

    /// Whether a tracer is bootstrapped (the process's `OTEL_*` variables asked for traces).
    /// Asked twice for every payload: a flag set by `bootstrap`, where asking the instrumentation
    /// system takes its lock and casts its instrument each time.
    public static var isOn: Bool { bootstrapped.load(ordering: .relaxed) }

    private static let bootstrapped = Atomic(false)
    /// The tracer `bootstrap` was given: the instrumentation system finds its tracer under a lock
    /// and by a cast through its instruments, for every span.
    private static let tracer = Mutex<(any Tracer)?>(nil)

    /// Makes `tracer` the process's, once, before any payload is taken.
    public static func bootstrap(_ tracer: some Tracer) {
        InstrumentationSystem.bootstrap(tracer)
        Self.tracer.withLock { $0 = tracer }
        bootstrapped.store(true, ordering: .relaxed)
    }

    /// Nil when no tracer is bootstrapped.
    public static func begin(in context: ServiceContext? = ServiceContext.current) -> PayloadTrace? {
        guard isOn else { return nil }
        return PayloadTrace(parent: context ?? .topLevel)
    }

    /// The context a request or message came with (`traceparent`, `tracestate` and whatever else
    /// the bootstrapped propagators read), through `field`, which gives a header's value by its
    /// lower-case name; nil with traces off.
    public static func context(from field: @escaping @Sendable (String) -> String?) -> ServiceContext? {
        guard isOn else { return nil }
        var context = ServiceContext.topLevel
        InstrumentationSystem.instrument.extract(field, into: &context, using: FieldExtractor())
        return context
    }

    /// `body` with the context `field` gives as the current one (its payload's span, and its log
    /// lines' trace and span ids, go under it); just `body` with traces off.
    public static func within<T: Sendable>(contextFrom field: @escaping @Sendable (String) -> String?,
                                           _ body: () async -> T) async -> T {
        guard let context = context(from: field) else { return await body() }
        return await ServiceContext.withValue(context) { await body() }
    }

    /// `within`, for work that does not wait (a relay's payload enriched from its event loop).
    public static func within<T>(contextFrom field: @escaping @Sendable (String) -> String?, _ body: () -> T) -> T {
        guard let context = context(from: field) else { return body() }
        return ServiceContext.withValue(context) { body() }
    }

    /// The span tree of `report`, ending now. `door`: service, relay or worker; `tenant`: whose
    /// payload it was, with a tenants file; `attributes`: the door's own, on the payload's span.
    public func end(_ report: EnrichReport, door: String, tenant: String?, attributes: [String: String] = [:]) {
        let tracer = Self.tracer.withLock { $0 } ?? InstrumentationSystem.tracer
        let end = DefaultTracerClock.now.nanosecondsSinceEpoch
        // The report's offsets count from when the payload reached the runtime: elapsed before now.
        let start = end - min(end, nanoseconds(report.elapsedMs))
        func at(_ ms: Double) -> DefaultTracerClock.Instant {
            DefaultTracerClock.Instant(nanosecondsSinceEpoch: start + nanoseconds(ms))
        }
        let payload = tracer.startSpan("attache.enrich", context: parent, ofKind: .internal, at: at(0))
        var own = Attributes(capacity: 7 + attributes.count)
        own.put("attache.door", door)
        own.put("attache.outcome", report.outcome.rawValue)
        own.put("attache.reason", report.reason?.description)
        own.put("attache.deadline_ms", Int(report.deadlineMs))
        own.put("attache.payload_bytes", report.payloadBytes)
        own.put("attache.attachments", report.attachments.count)
        own.put("attache.tenant", tenant)
        for (key, value) in attributes { own.put(key, value) }
        payload.updateAttributes { own.add(to: &$0) }
        // A payload that asked for media and went out without it is what an on-call engineer
        // looks for; a passthrough is no failure.
        if report.outcome == .fallback {
            payload.setStatus(SpanStatus(code: .error, message: report.reason?.description))
        }
        for attachment in report.attachments {
            let stages = attachment.timings.spans
            let first = stages.map(\.start).min() ?? 0
            let last = stages.map { $0.start + $0.length }.max() ?? first
            let span = tracer.startSpan("attache.attachment", context: payload.context, ofKind: .client, at: at(first))
            let described = describe(attachment)
            span.updateAttributes { described.add(to: &$0) }
            if attachment.outcome == .failed {
                span.setStatus(SpanStatus(code: .error, message: attachment.message ?? attachment.reason?.description))
            }
            for stage in stages {
                let child = tracer.startSpan(stage.stage, context: span.context, ofKind: .internal, at: at(stage.start))
                child.end(at: at(stage.start + stage.length))
            }
            span.end(at: at(last))
        }
        payload.end(at: DefaultTracerClock.Instant(nanosecondsSinceEpoch: end))
    }

    /// OpenTelemetry's names where one exists (url.*, server.*, network.peer.address,
    /// http.response.status_code); Attache's own under `attache.`.
    private func describe(_ attachment: AttachmentReport) -> Attributes {
        var a = Attributes(capacity: 14)
        a.put("attache.attachment.id", attachment.id)
        a.put("attache.attachment.outcome", attachment.outcome.description)
        a.put("attache.reason", attachment.reason?.description)
        a.put("attache.detail", attachment.detail?.rawValue)
        a.put("attache.cache", attachment.cache?.rawValue)
        a.put("attache.media.kind", attachment.kind?.rawValue)
        a.put("attache.media.format", attachment.format?.rawValue)
        a.put("attache.media.bytes", attachment.bytes)
        a.put("http.response.status_code", attachment.httpStatus)
        a.put("network.peer.address", attachment.connectedIP)
        if let url = Self.summary(of: attachment.source) {
            a.put("url.full", url.withoutQuery)
            a.put("url.scheme", url.scheme)
            a.put("server.address", url.host)
            a.put("server.port", url.port)
        }
        return a
    }

    /// The URLs of recent attachments, read by libcurl's parser once each: a campaign names the
    /// same media in every payload, and parsing it again took more than the rest of its span.
    /// Emptied when full.
    private static let summaries = Mutex<[String: URLSummary?]>([:])

    private static func summary(of url: String) -> URLSummary? {
        if let known = summaries.withLock({ $0[url] }) { return known }
        let summary = URLSummary(url)
        summaries.withLock { known in
            if known.count >= 1024 { known.removeAll(keepingCapacity: true) }
            known[url] = summary
        }
        return summary
    }

    private func nanoseconds(_ ms: Double) -> UInt64 {
        UInt64(max(0, ms * 1_000_000))
    }
}

/// A span's attributes gathered before they are handed over at once, in a dictionary made with
/// room for them: `SpanAttributes`' subscript takes any `SpanAttributeConvertible` (a box and a
/// dynamic conversion per value) and grows its dictionary key by key, which made a payload's two
/// spans cost more to describe than to start. An absent value is left out, as the subscript does.
private struct Attributes {
    var values: [String: SpanAttribute]

    init(capacity: Int) {
        values = Dictionary(minimumCapacity: capacity)
    }

    mutating func put(_ key: String, _ value: String?) {
        if let value { values[key] = .string(value) }
    }

    mutating func put(_ key: String, _ value: Int?) {
        if let value { values[key] = .int64(Int64(value)) }
    }

    /// Onto a span's own: handed over whole when it has none yet (the span was just started).
    func add(to attributes: inout SpanAttributes) {
        if attributes.isEmpty {
            attributes = SpanAttributes(values)
        } else {
            attributes.merge(SpanAttributes(values))
        }
    }
}

private struct FieldExtractor: Extractor {
    func extract(key: String, from carrier: @Sendable (String) -> String?) -> String? {
        carrier(key.lowercased())
    }
}
