import AttacheHTTPKit
import AttacheOperations
import AttacheTracing
import HTTPTypes
import Hummingbird

/// With a tracer bootstrapped, each request's server span (`ServerSpan`), under its
/// `traceparent`: the parent of its payload's span, ended once the answer's body is written (a
/// media file's too). The router's responder, wrapped, rather than a middleware of the router's:
/// a middleware is called through an existential and two closures, each an async frame allocated
/// and a hop per request, which cost a traced enrichment more than recording its span.
struct ServerSpanResponder<Base: HTTPResponder<AttacheRequestContext>>: HTTPResponder {
    let base: Base

    func respond(to request: Request, context: AttacheRequestContext) async throws -> Response {
        // The three fields the span reads, in one pass: a field read by its name
        // (`headers[.userAgent]`) scans every field and joins what it finds, which cost a cached
        // enrichment more than the span's recording. Repeated fields are joined as that does.
        // Read in place, by position: iterating the fields copies each one (its name's and value's
        // storage retained and released).
        var traceparent: String?, tracestate: String?, userAgent: String?
        let headers = request.headers
        for i in headers.indices {
            // A name is compared with the one of its length alone (most fields are none of them).
            switch headers[i].name.canonicalName.utf8.count {
            case 11 where headers[i].name == .traceparent: traceparent = joined(traceparent, headers[i].value)
            case 10 where headers[i].name == .tracestate: tracestate = joined(tracestate, headers[i].value)
            case 10 where headers[i].name == .userAgent: userAgent = joined(userAgent, headers[i].value)
            default: break
            }
        }
        func joined(_ known: String?, _ value: String) -> String { known.map { "\($0), \(value)" } ?? value }
        let described = ServerSpan.Request(method: request.method.rawValue, path: request.uri.path, userAgent: userAgent)
        guard let span = ServerSpan.begin(described, traceparent: traceparent, tracestate: tracestate) else {
            return try await base.respond(to: request, context: context)
        }
        do {
            // Bound here rather than through a function of ServerSpan's: each async function
            // between the router and the handler is a frame allocated and a hop.
            let response = try await TraceContext.$current.withValue(span.context) { try await base.respond(to: request, context: context) }
            let route = Self.route(context), status = Int(response.status.code)
            // An answer of a few kilobytes (an enriched payload, an error, a probe) is written the
            // moment it is returned: its span ends now. Wrapping its body to end the span after
            // the write would make Hummingbird write it through the async body writer (a task hop
            // and a write of its own) instead of with the head, for no difference in the times.
            if let bytes = response.body.contentLength, bytes <= 64 * 1024 {
                span.end(route: route, status: status)
                return response
            }
            var streamed = response
            streamed.body = ResponseBody(contentLength: response.body.contentLength) { [body = response.body] writer in
                defer { span.end(route: route, status: status) }
                try await body.write(writer)
            }
            return streamed
        } catch {
            span.end(route: Self.route(context), status: (error as? any HTTPResponseError)?.status.code ?? 500)
            throw error
        }
    }

    /// The route the request matched, as OpenTelemetry's `http.route` wants it: its path
    /// template; nil when none matched, where Hummingbird names its own responder instead
    /// (`NotFound`, with no leading slash).
    private static func route(_ context: AttacheRequestContext) -> String? {
        // Read where the router left it: through `RequestContext.endpointPath` the whole
        // `coreContext` (its logger's storage too) is copied out and released.
        context.coreContext.endpointPath.value.flatMap { $0.utf8.first == UInt8(ascii: "/") ? $0 : nil }
    }
}
