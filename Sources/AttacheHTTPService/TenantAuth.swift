import AttacheHTTPKit
import AttacheTenants
import HTTPTypes
import Hummingbird

/// With a tenants file: `Authorization: Bearer <token>` names the tenant of the request (its
/// SHA-256 against every tenant's hashes, in constant time); no token, or one of no tenant, is 401
/// before any handler runs.
struct TenantAuth: RouterMiddleware {
    typealias Context = AttacheRequestContext
    let tenants: Tenants

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let tenant = tenants.tenant(token: BearerAuth<Context>.presented(request)) else {
            return ErrorResponse.response(.unauthorized, "unauthorized", headers: [.wwwAuthenticate: "Bearer"])
        }
        var context = context
        context.tenant = tenant
        return try await next(request, context)
    }
}
