import Attache
import AttacheEnrichment
import AttacheTenants
import Synchronization

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

    /// The deadline rule for `tenant`'s payloads: the door's, capped by the tenant's own.
    public func policy(for tenant: Tenant?) -> DeadlinePolicy {
        tenant?.maxBudget.map { policy.capped(at: $0) } ?? policy
    }

    /// `tenant` is whom the door found the payload to be (by token, app or header); with a tenants
    /// file, nil is a payload of no tenant.
    public func admit(_ tenant: Tenant?) -> Decision {
        guard let tenants else { return .admitted(Admission(tenant: nil, scope: .unscoped, policy: policy, tenants: nil, metrics: metrics)) }
        guard let tenant else { return .unknownTenant }
        if let refusal = tenants.enter(tenant) {
            metrics.refused(tenant: tenant.name, kind: refusal.kind.rawValue)
            return .refused(tenant, refusal)
        }
        return .admitted(Admission(tenant: tenant, scope: tenants.scope(for: tenant),
                                   policy: self.policy(for: tenant), tenants: tenants,
                                   metrics: metrics))
    }
}

/// A payload let in: its tenant's scope and deadline rule, and the tenant's slot. It ends with
/// `finish(_:)`, which records what the payload came to under the tenant's name and gives the slot
/// back; `leave()` gives it back on a path with no emission (a body too large, not a payload).
/// Either may be called again, or both: the slot is given back once.
public final class Admission: Sendable {
    public let tenant: Tenant?
    public let scope: EnrichmentScope
    public let policy: DeadlinePolicy
    let tenants: Tenants?
    let metrics: EnrichmentMetrics
    private let left = Atomic<Bool>(false)

    init(tenant: Tenant?, scope: EnrichmentScope, policy: DeadlinePolicy, tenants: Tenants?, metrics: EnrichmentMetrics) {
        self.tenant = tenant
        self.scope = scope
        self.policy = policy
        self.tenants = tenants
        self.metrics = metrics
    }

    /// The payload's answer: counted (outcome, reason, each attachment's fetch and cache event,
    /// under the tenant), and the slot given back.
    public func finish(_ emission: Emission) {
        metrics.request(emission.report, tenant: tenant?.name)
        leave()
    }

    public func leave() {
        guard !left.exchange(true, ordering: .acquiringAndReleasing) else { return }
        if let tenant { tenants?.leave(tenant) }
    }

    deinit { leave() }
}
