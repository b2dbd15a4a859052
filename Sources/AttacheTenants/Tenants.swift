import Attache
import AttacheEnrichment
import AttacheSupport
import Metrics
import Synchronization

/// The tenants in force: who a token belongs to, what each tenant's payloads are enriched with
/// (its scope), and its running counts. A new version of the file replaces the tenants at once;
/// a request keeps the tenant and scope it started with, and the counts carry over by name.
public final class Tenants: Sendable {
    private struct Version {
        var tenants: [Tenant]
        var scopes: [String: EnrichmentScope]
    }
    private let current: Mutex<Version>
    private let counters = Mutex<[String: TenantCounters]>([:])
    private let makeScope: @Sendable (Tenant) throws -> EnrichmentScope

    /// `makeScope` builds a tenant's scope (its store, hosts, caps); see `scope(in:)`.
    public init(_ tenants: [Tenant], makeScope: @escaping @Sendable (Tenant) throws -> EnrichmentScope) throws {
        self.makeScope = makeScope
        current = Mutex(Version(tenants: [], scopes: [:]))
        try update(tenants)
    }

    /// Scopes on an enrichment's store: each tenant's copies under its prefix, its hosts and caps,
    /// its cache namespace.
    public static func scope(in enrichment: Enrichment) -> @Sendable (Tenant) throws -> EnrichmentScope {
        { tenant in
            var scope = EnrichmentScope(name: tenant.name, store: try enrichment.store(prefix: tenant.storePrefix, publicBaseURL: tenant.publicBaseURL),
                                        allowedHosts: tenant.hosts, limits: tenant.limits, cacheNamespace: tenant.cacheNamespace)
            scope.sharesResultsAcrossStores = tenant.cacheGroup != nil
            return scope
        }
    }

    /// Puts a new version in force, once every tenant's scope could be made (else throws, and the
    /// version in force stays).
    public func update(_ tenants: [Tenant]) throws {
        var scopes: [String: EnrichmentScope] = [:]
        for tenant in tenants { scopes[tenant.name] = try makeScope(tenant) }
        counters.withLock { counters in
            for tenant in tenants where counters[tenant.name] == nil {
                counters[tenant.name] = TenantCounters(burst: tenant.rate?.burst ?? 1)
            }
        }
        current.withLock { $0 = Version(tenants: tenants, scopes: scopes) }
    }

    public var all: [Tenant] { current.withLock { $0.tenants } }

    /// The tenant a bearer token belongs to: its SHA-256 compared in constant time with every hash
    /// of every tenant (the loop does not stop at a match).
    public func tenant(token: some Collection<UInt8>) -> Tenant? {
        guard !token.isEmpty, let digest = try? SHA256Hasher.hash(Array(token)) else { return nil }
        var found: Tenant?
        for tenant in all {
            for hash in tenant.tokenHashes where constantTimeEqual(hash, digest) { found = tenant }
        }
        return found
    }

    /// The tenant whose `apps` name this APNs topic or FCM project.
    public func tenant(app: String) -> Tenant? {
        current.withLock { $0.tenants.first { $0.apps.contains(app) } }
    }

    public func tenant(named name: String) -> Tenant? {
        current.withLock { $0.tenants.first { $0.name == name } }
    }

    /// The scope of the version in force (a tenant removed since: its own scope, made again), its
    /// downloads claimed from the tenant's daily quota as they arrive.
    public func scope(for tenant: Tenant) -> EnrichmentScope {
        var scope = current.withLock({ $0.scopes[tenant.name] })
            ?? (try? makeScope(tenant))
            ?? EnrichmentScope(name: tenant.name, allowedHosts: tenant.hosts, limits: tenant.limits, cacheNamespace: tenant.cacheNamespace)
        if let quota = tenant.dailyDownloadBytes {
            let counts = counts(tenant)
            let claimed = Counter(label: "attache_tenant_quota_bytes_total", dimensions: [("tenant", tenant.name)])
            scope.downloadAllowance = { bytes in
                guard counts.claim(bytes, quota: quota) else { return false }
                claimed.increment(by: Int64(bytes))
                return true
            }
        }
        return scope
    }

    /// Takes a rate token and a concurrency slot for one payload, or says why not; pair with `leave`.
    public func enter(_ tenant: Tenant) -> TenantRefusal? {
        counts(tenant).enter(tenant)
    }

    /// Ends what `enter` began. (What the payload downloaded was claimed from the daily quota as
    /// it arrived: see `scope(for:)`.)
    public func leave(_ tenant: Tenant) {
        counts(tenant).leave()
    }

    /// Payloads of a tenant in flight now.
    public func inFlight(_ name: String) -> Int {
        counters.withLock { $0[name] }?.inFlight ?? 0
    }

    private func counts(_ tenant: Tenant) -> TenantCounters {
        counters.withLock { counters in
            if let c = counters[tenant.name] { return c }
            let c = TenantCounters(burst: tenant.rate?.burst ?? 1)
            counters[tenant.name] = c
            return c
        }
    }
}
