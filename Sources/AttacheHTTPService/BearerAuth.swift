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
        let header = request.headers[.authorization] ?? ""
        let presented = header.hasPrefix("Bearer ") ? Array(header.utf8.dropFirst(7)) : []
        // Every token is compared in full, whether or not an earlier one matched.
        var accepted = false
        for token in tokens where Self.constantTimeEqual(token, presented) { accepted = true }
        guard accepted else {
            return ErrorResponse.response(.unauthorized, "unauthorized", headers: [.wwwAuthenticate: "Bearer"])
        }
        return try await next(request, context)
    }

    /// Time depends only on the lengths, never on where the bytes differ.
    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var difference = UInt8(a.count == b.count ? 0 : 1)
        let n = max(a.count, b.count)
        for i in 0..<n {
            let x = i < a.count ? a[i] : 0
            let y = i < b.count ? b[i] : 0
            difference |= x ^ y
        }
        return difference == 0
    }
}
