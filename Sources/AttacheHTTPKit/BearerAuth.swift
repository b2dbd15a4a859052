import AttacheSupport
import HTTPTypes
import Hummingbird

/// Requires `Authorization: Bearer <token>` on the routes of the group it guards (`/v1/enrich`,
/// `/metrics`) when tokens are configured. Tokens are compared in constant time; a refused request
/// never reaches a handler (no fetch).
public struct BearerAuth<Context: RequestContext>: RouterMiddleware {
    let tokens: [[UInt8]]

    public init(tokens: [String]) {
        self.tokens = tokens.map { Array($0.utf8) }
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard !tokens.isEmpty else { return try await next(request, context) }
        let presented = Self.presented(request)
        // Every token is compared in full, whether or not an earlier one matched.
        var accepted = false
        for token in tokens where constantTimeEqual(token, presented) { accepted = true }
        guard accepted else {
            return ErrorResponse.response(.unauthorized, "unauthorized", headers: [.wwwAuthenticate: "Bearer"])
        }
        return try await next(request, context)
    }

    /// The token of `Authorization: Bearer <token>`; empty when there is none.
    public static func presented(_ request: Request) -> [UInt8] {
        let header = request.headers[.authorization] ?? ""
        return header.hasPrefix("Bearer ") ? Array(header.utf8.dropFirst(7)) : []
    }
}
