import Attache
import AttacheEnrichment
import AttacheTenants

/// Who a payload is enriched for, and under which deadline rule: the one admission the service,
/// the relay and the worker make before they read a payload. Without a tenants file every payload
/// is let in, unscoped, under the door's rule.
public struct AdmissionGate: Sendable {
    public let tenants: Tenants?
    /// The door's deadline rule, before a tenant's own cap.
    public let policy: DeadlinePolicy
    let metrics: EnrichmentMetrics

    public init(tenants: Tenants?, policy: DeadlinePolicy, metrics: EnrichmentMetrics) {
        self.tenants = tenants
        self.policy = policy
        self.metrics = metrics
    }

    public enum Decision: Sendable {
        /// Let in: enrich it in the admission's scope, and `leave()` when it is done.
        case admitted(Admission)
        /// The tenant is past its rate, concurrency or daily quota (counted in the metrics).
        case refused(Tenant, TenantRefusal)
        /// A tenants file names no such tenant.
        case unknownTenant
    }

    /// `tenant` is whom the door found the payload to be (by token, app or header); with a tenants
    /// file, nil is a payload of no tenant.
    public func admit(_ tenant: Tenant?) -> Decision {
        guard let tenants else { return .admitted(Admission(tenant: nil, scope: .unscoped, policy: policy, tenants: nil)) }
        guard let tenant else { return .unknownTenant }
        if let refusal = tenants.enter(tenant) {
            metrics.refused(tenant: tenant.name, kind: refusal.kind.rawValue)
            return .refused(tenant, refusal)
        }
        return .admitted(Admission(tenant: tenant, scope: tenants.scope(for: tenant),
                                   policy: tenant.maxDeadline.map { policy.capped(at: $0) } ?? policy, tenants: tenants))
    }
}

/// A payload let in: its tenant's scope and deadline rule, and the tenant's slot, given back by
/// `leave()` once the enrichment is done (the door calls it on every path, once).
public struct Admission: Sendable {
    public let tenant: Tenant?
    public let scope: EnrichmentScope
    public let policy: DeadlinePolicy
    let tenants: Tenants?

    public func leave() {
        if let tenant { tenants?.leave(tenant) }
    }
}
