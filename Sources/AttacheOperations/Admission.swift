import Attache
import AttacheEnrichment
import AttacheTenants
import Synchronization
import Tracing

/// Who a payload is enriched for, and under which deadline rule: the one admission the service,
/// the relay and the worker make before they read a payload. Without a tenants file every payload
/// is let in, unscoped, under the door's rule.
public struct AdmissionGate: Sendable {
    public let tenants: Tenants?
    /// The door's deadline rule, before a tenant's own cap.
    public let policy: DeadlinePolicy
    let metrics: EnrichmentMetrics
    /// service, relay or worker: said on each payload's span.
    let door: String

    public init(tenants: Tenants?, policy: DeadlinePolicy, metrics: EnrichmentMetrics, door: String) {
        self.tenants = tenants
        self.policy = policy
        self.metrics = metrics
        self.door = door
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
    /// file, nil is a payload of no tenant. The payload's span, when traces are on, goes under the
    /// context current here (the door sets it from the request's or message's `traceparent`).
    public func admit(_ tenant: Tenant?) -> Decision {
        guard let tenants else { return .admitted(Admission(tenant: nil, scope: .unscoped, policy: policy, tenants: nil, gate: self)) }
        guard let tenant else { return .unknownTenant }
        if let refusal = tenants.enter(tenant) {
            metrics.refused(tenant: tenant.name, kind: refusal.kind.rawValue)
            return .refused(tenant, refusal)
        }
        return .admitted(Admission(tenant: tenant, scope: tenants.scope(for: tenant),
                                   policy: self.policy(for: tenant), tenants: tenants, gate: self))
    }

    /// A payload's answer, counted and traced: through its admission when it had one, else (sent
    /// on unenriched: a tenant past its limits, or none) under no tenant. `attributes`: what the
    /// door adds to the payload's span (the worker: OpenTelemetry's messaging attributes).
    public func finish(_ emission: Emission, admission: Admission?, attributes: [String: String] = [:]) {
        if let admission {
            admission.finish(emission, attributes: attributes)
        } else {
            metrics.request(emission.report)
            PayloadTrace.begin()?.end(emission.report, door: door, tenant: nil, attributes: attributes)
        }
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
    let door: String
    /// Nil with traces off.
    let trace: PayloadTrace?
    private let left = Atomic<Bool>(false)

    init(tenant: Tenant?, scope: EnrichmentScope, policy: DeadlinePolicy, tenants: Tenants?, gate: AdmissionGate) {
        self.tenant = tenant
        self.scope = scope
        self.policy = policy
        self.tenants = tenants
        metrics = gate.metrics
        door = gate.door
        trace = PayloadTrace.begin()
    }

    /// The payload's answer: counted (outcome, reason, each attachment's fetch and cache event,
    /// under the tenant), traced, and the slot given back.
    public func finish(_ emission: Emission, attributes: [String: String] = [:]) {
        metrics.request(emission.report, tenant: tenant?.name)
        trace?.end(emission.report, door: door, tenant: tenant?.name, attributes: attributes)
        leave()
    }

    public func leave() {
        guard !left.exchange(true, ordering: .acquiringAndReleasing) else { return }
        if let tenant { tenants?.leave(tenant) }
    }

    deinit { leave() }
}
