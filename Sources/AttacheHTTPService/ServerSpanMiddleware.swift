import AttacheOperations
import HTTPTypes
import Hummingbird

/// With a tracer bootstrapped, each request's server span (`ServerSpan`), under its
/// `traceparent`: the parent of its payload's span, ended once the answer's body is written (a
/// media file's too).
struct ServerSpanMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let headers = request.headers
        let field: @Sendable (String) -> String? = { name in
            switch name {
            case "traceparent": headers[.traceparent]
            case "tracestate": headers[.tracestate]
            default: nil
            }
        }
        let described = ServerSpan.Request(method: request.method.rawValue, path: request.uri.path,
                                           bodyBytes: headers[.contentLength].flatMap { Int($0) }, userAgent: headers[.userAgent])
        guard let span = ServerSpan.begin(described, contextFrom: field) else { return try await next(request, context) }
        do {
            var response = try await span.within { try await next(request, context) }
            let route = context.endpointPath, status = Int(response.status.code), responseBytes = response.body.contentLength
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
            span.end(route: context.endpointPath, status: (error as? any HTTPResponseError)?.status.code ?? 500, responseBytes: nil)
            throw error
        }
    }
}
