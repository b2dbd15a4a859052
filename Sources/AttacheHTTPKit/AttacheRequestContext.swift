import AttacheTenants
import Hummingbird
import NIOCore

/// The request context of the service: Hummingbird's core context plus the connection the
/// request came on, so that work for a client who has gone can be stopped.
public struct AttacheRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public let channel: any Channel
    /// Whose request it is, once `TenantAuth` has read its token (with a tenants file).
    public var tenant: Tenant?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}
