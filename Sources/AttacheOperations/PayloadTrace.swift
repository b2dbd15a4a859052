import Attache
import AttacheFetch
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
    public static var isOn: Bool { !(InstrumentationSystem.tracer is NoOpTracer) }

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

    /// The span tree of `report`, ending now. `door`: service, relay or worker; `tenant`: whose
    /// payload it was, with a tenants file; `attributes`: the door's own, on the payload's span.
    public func end(_ report: EnrichReport, door: String, tenant: String?, attributes: [String: String] = [:]) {
        let tracer = InstrumentationSystem.tracer
        let end = DefaultTracerClock.now.nanosecondsSinceEpoch
        // The report's offsets count from when the payload reached the runtime: elapsed before now.
        let start = end - min(end, nanoseconds(report.elapsedMs))
        func at(_ ms: Double) -> DefaultTracerClock.Instant {
            DefaultTracerClock.Instant(nanosecondsSinceEpoch: start + nanoseconds(ms))
        }
        let payload = tracer.startSpan("attache.enrich", context: parent, ofKind: .internal, at: at(0))
        payload.updateAttributes { a in
            a["attache.door"] = door
            a["attache.outcome"] = report.outcome.rawValue
            a["attache.reason"] = report.reason?.description
            a["attache.deadline_ms"] = Int(report.deadlineMs)
            a["attache.payload_bytes"] = report.payloadBytes
            a["attache.attachments"] = report.attachments.count
            a["attache.tenant"] = tenant
            for (key, value) in attributes { a[key] = value }
        }
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
            span.updateAttributes { a in describe(attachment, into: &a) }
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
    private func describe(_ attachment: AttachmentReport, into a: inout SpanAttributes) {
        a["attache.attachment.id"] = attachment.id
        a["attache.attachment.outcome"] = attachment.outcome.description
        a["attache.reason"] = attachment.reason?.description
        a["attache.detail"] = attachment.detail?.rawValue
        a["attache.cache"] = attachment.cache?.rawValue
        a["attache.media.kind"] = attachment.kind?.rawValue
        a["attache.media.format"] = attachment.format?.rawValue
        a["attache.media.bytes"] = attachment.bytes
        a["http.response.status_code"] = attachment.httpStatus
        a["network.peer.address"] = attachment.connectedIP
        if let url = URLSummary(attachment.source) {
            a["url.full"] = url.withoutQuery
            a["url.scheme"] = url.scheme
            a["server.address"] = url.host
            a["server.port"] = url.port
        }
    }

    private func nanoseconds(_ ms: Double) -> UInt64 {
        UInt64(max(0, ms * 1_000_000))
    }
}

private struct FieldExtractor: Extractor {
    func extract(key: String, from carrier: @Sendable (String) -> String?) -> String? {
        carrier(key.lowercased())
    }
}
