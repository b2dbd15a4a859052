import Attache
import AttacheFetch
import AttacheTracing
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
/// The parent is the context the door was given the payload in: the HTTP request's (its server
/// span, `ServerSpan`, under its `traceparent`), the relay's stream's, the JetStream message's
/// headers.
public struct PayloadTrace: Sendable {
    let tracer: AttacheTracer
    /// Where the payload's span goes: the context's span, nil for a new trace.
    let parent: TraceContext?

    /// Whether a tracer is bootstrapped (the process's `OTEL_*` variables asked for traces).
    public static var isOn: Bool { tracer != nil }

    /// The address of the tracer `bootstrap` was given (retained for the life of the process), 0
    /// before: read per request without a lock (the instrumentation system finds its tracer under
    /// a lock and by a cast through its instruments), and as a plain word, since
    /// `AtomicLazyReference`'s generic load looked up type metadata on every read.
    private static let installed = Atomic<UInt>(0)

    /// The bootstrapped tracer; nil with traces off.
    static var tracer: AttacheTracer? {
        let address = installed.load(ordering: .acquiring)
        guard let pointer = UnsafeRawPointer(bitPattern: address) else { return nil }
        return Unmanaged<AttacheTracer>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// Makes `tracer` the process's, once, before any payload is taken.
    public static func bootstrap(_ tracer: AttacheTracer) {
        InstrumentationSystem.bootstrap(tracer)
        let retained = Unmanaged.passRetained(tracer)
        let address = UInt(bitPattern: retained.toOpaque())
        if !installed.compareExchange(expected: 0, desired: address, ordering: .acquiringAndReleasing).exchanged { retained.release() }
    }

    /// Nil when no tracer is bootstrapped. `parent`: where the payload's span goes, nil for a new
    /// trace.
    public static func begin(under parent: TraceContext? = TraceContext.current) -> PayloadTrace? {
        guard let tracer else { return nil }
        return PayloadTrace(tracer: tracer, parent: parent)
    }

    /// The caller's place a request or message came with (`traceparent`, `tracestate`), through
    /// `field`, which gives a header's value by its lower-case name; nil without one, or with
    /// traces off.
    public static func caller(from field: (String) -> String?) -> TraceContext? {
        guard tracer != nil else { return nil }
        return AttacheTracer.caller(traceparent: field("traceparent"), tracestate: field("tracestate"))
    }

    /// `body` with the caller's place `field` gives as the current one (its payload's span, and
    /// its log lines' trace and span ids, go under it); just `body` with traces off.
    public static func within<T: Sendable>(contextFrom field: (String) -> String?, _ body: () async -> T) async -> T {
        guard let caller = caller(from: field) else { return await body() }
        return await TraceContext.$current.withValue(caller) { await body() }
    }

    /// `within`, for work that does not wait (a relay's payload enriched from its event loop).
    public static func within<T>(contextFrom field: (String) -> String?, _ body: () -> T) -> T {
        guard let caller = caller(from: field) else { return body() }
        return TraceContext.$current.withValue(caller) { body() }
    }

    /// The span tree of `report`, ending now. `door`: service, relay or worker; `tenant`: whose
    /// payload it was, with a tenants file; `attributes`: the door's own, on the payload's span.
    /// The times are known, so each span is recorded whole (`AttacheTracer.record`).
    public func end(_ report: EnrichReport, door: String, tenant: String?, attributes: [String: String] = [:]) {
        let end = DefaultTracerClock.now.nanosecondsSinceEpoch
        // The report's offsets count from when the payload reached the runtime: elapsed before now.
        let start = end - min(end, nanoseconds(report.elapsedMs))
        func at(_ ms: Double) -> UInt64 { start + nanoseconds(ms) }
        // A payload that asked for media and went out without it is what an on-call engineer
        // looks for; a passthrough is no failure.
        let failed = report.outcome == .fallback ? SpanStatus(code: .error, message: report.reason?.description) : nil
        let payload = tracer.record("attache.enrich", kind: .internal, parent: parent, start: start, end: end, status: failed) { a in
            a.attribute("attache.door", door)
            a.attribute("attache.outcome", report.outcome.rawValue)
            a.attribute("attache.reason", report.reason?.description)
            a.attribute("attache.deadline_ms", Int(report.deadlineMs))
            a.attribute("attache.payload_bytes", report.payloadBytes)
            a.attribute("attache.attachments", report.attachments.count)
            a.attribute("attache.tenant", tenant)
            for (key, value) in attributes { a.attribute(named: key, value) }
        }
        for attachment in report.attachments {
            let stages = attachment.timings.spans
            let first = stages.map(\.start).min() ?? 0
            let last = stages.map { $0.start + $0.length }.max() ?? first
            let status = attachment.outcome == .failed
                ? SpanStatus(code: .error, message: attachment.message ?? attachment.reason?.description) : nil
            let span = tracer.record("attache.attachment", kind: .client, parent: payload, start: at(first), end: at(last), status: status) {
                describe(attachment, into: &$0)
            }
            for stage in stages {
                tracer.record(stage.stage, kind: .internal, parent: span, start: at(stage.start), end: at(stage.start + stage.length))
            }
        }
    }

    /// OpenTelemetry's names where one exists (url.*, server.*, network.peer.address,
    /// http.response.status_code); Attache's own under `attache.`.
    private func describe(_ attachment: AttachmentReport, into a: inout ProtobufWriter) {
        a.attribute("attache.attachment.id", attachment.id)
        a.attribute("attache.attachment.outcome", attachment.outcome.description)
        a.attribute("attache.reason", attachment.reason?.description)
        a.attribute("attache.detail", attachment.detail?.rawValue)
        a.attribute("attache.cache", attachment.cache?.rawValue)
        a.attribute("attache.media.kind", attachment.kind?.rawValue)
        a.attribute("attache.media.format", attachment.format?.rawValue)
        a.attribute("attache.media.bytes", attachment.bytes)
        a.attribute("http.response.status_code", attachment.httpStatus)
        a.attribute("network.peer.address", attachment.connectedIP)
        if let url = Self.urlAttributes(of: attachment.source) { a.attributes(url) }
    }

    /// The URL attributes of recent attachments (`url.full`, `url.scheme`, `server.address`,
    /// `server.port`), each URL read by libcurl's parser and its attributes written once: a
    /// campaign names the same media in every payload, and parsing it again took more than the
    /// rest of its span. The last one is compared first, which costs less than hashing it. Nil
    /// for a URL the fetch would refuse to read. Emptied when full.
    private struct KnownURLs {
        var last: (url: String, attributes: EncodedAttributes?)?
        var known: [String: EncodedAttributes?] = [:]
    }

    private static let knownURLs = Mutex(KnownURLs())

    private static func urlAttributes(of url: String) -> EncodedAttributes? {
        let found = knownURLs.withLock { urls -> EncodedAttributes?? in
            if let last = urls.last, last.url == url { return .some(last.attributes) }
            guard let known = urls.known[url] else { return nil }
            urls.last = (url, known)
            return .some(known)
        }
        if let found { return found }
        let attributes = URLSummary(url).map { url in
            EncodedAttributes { a in
                a.attribute("url.full", url.withoutQuery)
                a.attribute("url.scheme", url.scheme)
                a.attribute("server.address", url.host)
                a.attribute("server.port", url.port)
            }
        }
        knownURLs.withLock { urls in
            if urls.known.count >= 1024 { urls.known.removeAll(keepingCapacity: true) }
            urls.known[url] = attributes
            urls.last = (url, attributes)
        }
        return attributes
    }

    private func nanoseconds(_ ms: Double) -> UInt64 {
        UInt64(max(0, ms * 1_000_000))
    }
}

/// An HTTP server span: its place in the trace taken as the request arrives (under the caller's
/// `traceparent`), so that the payload's span can name it as parent, and recorded whole once the
/// answer is written, its attributes straight into the span. Hummingbird's `TracingMiddleware`,
/// through swift-distributed-tracing's span API (a span object, a dictionary of boxed attributes,
/// the instrumentation system's lock, every body written through a closure), cost a cached
/// enrichment about 20 µs of CPU more than this (Benchmarks/serve.sh, traces on and off).
public struct ServerSpan: Sendable {
    /// What the request says of itself, recorded on the span.
    public struct Request: Sendable {
        public var method: String
        public var path: String
        public var userAgent: String?

        public init(method: String, path: String, userAgent: String?) {
            self.method = method
            self.path = path
            self.userAgent = userAgent
        }
    }

    let tracer: AttacheTracer
    let parent: TraceContext?
    let own: TraceContext
    let start: UInt64
    let request: Request
    /// This span's place: where its children go, bound as `TraceContext.current` while the
    /// request is handled (its payload's span and log lines go under it).
    public var context: TraceContext { own }

    /// Nil when no tracer is bootstrapped. `traceparent`, `tracestate`: the request's W3C Trace
    /// Context fields, the caller's place in its trace.
    public static func begin(_ request: consuming Request, traceparent: String?, tracestate: String?) -> ServerSpan? {
        guard let tracer = PayloadTrace.tracer else { return nil }
        let parent = AttacheTracer.caller(traceparent: traceparent, tracestate: tracestate)
        return ServerSpan(tracer: tracer, parent: parent, own: tracer.place(under: parent), start: DefaultTracerClock.now.nanosecondsSinceEpoch,
                          request: request)
    }

    /// Records the span, ending now, as OpenTelemetry's HTTP semantic conventions name a server
    /// span: `METHOD ROUTE` (the method alone when no route matched), with their required and
    /// recommended attributes (the method, scheme, path, route, status and user agent; their
    /// opt-in body sizes are left out, as they leave them unless asked), a status from 500 on
    /// marking it failed. The service listens for plain HTTP: `https` is a proxy's in front of it.
    public func end(route: String?, status: Int) {
        let failed = status >= 500 ? SpanStatus(code: .error) : nil
        tracer.record(request.method, nameDetail: route, kind: .server, as: own, parent: parent, start: start,
                      end: DefaultTracerClock.now.nanosecondsSinceEpoch, status: failed) { a in
            a.attribute("http.request.method", request.method)
            a.attribute("url.scheme", "http")
            a.attribute("url.path", request.path)
            a.attribute("http.route", route)
            a.attribute("http.response.status_code", status)
            a.attribute("user_agent.original", request.userAgent)
        }
    }
}
