import HTTPTypes
import Hummingbird

/// A path the service has, asked with a method it does not answer there, is 405 with `Allow`
/// (RFC 9110 §15.5.6), not the router's 404: a client (or a contract test) is told the path is
/// right and the method wrong. The router cannot say which methods a path has, so the routes are
/// listed here beside it; a path is matched as the router matches it, empty segments skipped.
public struct MethodNotAllowed<Context: RequestContext>: RouterMiddleware {
    /// Each route: its segments (`**` for any rest of one segment or more) and its methods.
    let routes: [(segments: [Substring], methods: [HTTPRequest.Method])]

    public init(_ routes: [(path: String, methods: [HTTPRequest.Method])]) {
        self.routes = routes.map { (Self.segments($0.path), $0.methods) }
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            let segments = Self.segments(request.uri.path)
            guard let route = routes.first(where: { Self.matches(segments, $0.segments) }), !route.methods.contains(request.method) else {
                throw error
            }
            let allow = route.methods.map(\.rawValue).joined(separator: ", ")
            return ErrorResponse.response(.methodNotAllowed, "\(request.method.rawValue) is not allowed here: \(allow)",
                                          headers: [.allow: allow])
        }
    }

    private static func segments(_ path: String) -> [Substring] {
        path.prefix { $0 != "?" }.split(separator: "/")
    }

    private static func matches(_ path: [Substring], _ pattern: [Substring]) -> Bool {
        if pattern.last == "**" { return path.count >= pattern.count && zip(path, pattern.dropLast()).allSatisfy { $0 == $1 } }
        return path == pattern
    }
}
