import AttacheOperations
import AttacheTracing
import HTTPTypes
import Hummingbird

/// With a tracer bootstrapped, each request's server span (`ServerSpan`), under its
/// `traceparent`: the parent of its payload's span, ended once the answer's body is written (a
/// media file's too).
struct ServerSpanMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        // The four fields the span reads, in one pass: a field read by its name
        // (`headers[.userAgent]`) scans every field and joins what it finds, which cost a cached
        // enrichment more than the span's recording. Repeated fields are joined as that does.
        var traceparent: String?, tracestate: String?, userAgent: String?, length: String?
        // A name is compared with the one of its length alone (most fields are none of them).
        for field in request.headers {
            switch field.name.canonicalName.utf8.count {
            case 11 where field.name == .traceparent: traceparent = joined(traceparent, field.value)
            case 10 where field.name == .tracestate: tracestate = joined(tracestate, field.value)
            case 10 where field.name == .userAgent: userAgent = joined(userAgent, field.value)
            case 14 where field.name == .contentLength: length = joined(length, field.value)
            default: break
            }
        }
        func joined(_ known: String?, _ value: String) -> String { known.map { "\($0), \(value)" } ?? value }
        let described = ServerSpan.Request(method: request.method.rawValue, path: request.uri.path, bodyBytes: length.flatMap { Int($0) },
                                           userAgent: userAgent)
        guard let span = ServerSpan.begin(described, traceparent: traceparent, tracestate: tracestate) else {
            return try await next(request, context)
        }
        do {
            // Bound here rather than through a function of ServerSpan's: each async function
            // between the router and the handler is a frame allocated and a hop.
            var response = try await TraceContext.$current.withValue(span.context) { try await next(request, context) }
            let route = Self.route(context), status = Int(response.status.code), responseBytes = response.body.contentLength
            // An answer of a few kilobytes (an enriched payload, an error, a probe) is written the
            // moment it is returned: its span ends now. Wrapping its body to end the span after
            // the write would make Hummingbird write it through the async body writer (a task hop
            // and a write of its own) instead of with the head, for no difference in the times.
            if let responseBytes, responseBytes <= 64 * 1024 {
                span.end(route: route, status: status, responseBytes: responseBytes)
                return response
            }
            let body = response.body
            response.body = ResponseBody(contentLength: responseBytes) { writer in
                defer { span.end(route: route, status: status, responseBytes: responseBytes) }
                try await body.write(writer)
            }
            return response
        } catch {
            span.end(route: Self.route(context), status: (error as? any HTTPResponseError)?.status.code ?? 500, responseBytes: nil)
            throw error
        }
    }

    /// The route the request matched, as OpenTelemetry's `http.route` wants it: its path
    /// template; nil when none matched, where Hummingbird names its own responder instead
    /// (`NotFound`, with no leading slash).
    private static func route(_ context: Context) -> String? {
        context.endpointPath.flatMap { $0.utf8.first == UInt8(ascii: "/") ? $0 : nil }
    }
}
