import Attache
import AttacheFetch
import AttacheMedia
import AttacheStore

/// Who a payload is enriched for, when that changes how: a tenant's store (its prefix and public
/// URL), the hosts its media may come from, its media caps, and the part of the cache its results
/// live in. The default scope is the enrichment's own configuration, unchanged.
public struct EnrichmentScope: Sendable {
    /// The tenant's name, for logs (empty: the implicit single tenant).
    public var name: String
    /// Where this scope's media goes; nil: the enrichment's store.
    public var store: (any MediaStore)?
    /// Media hosts allowed by name; nil: any host.
    public var allowedHosts: HostAllowlist?
    /// Caps on the media; nil: the enrichment's.
    public var limits: MediaLimits?
    /// Results are cached per namespace: a scope never receives another namespace's result (its
    /// URLs would name another tenant's store). Tenants that share a namespace share results.
    public var cacheNamespace: String
    /// Results of this namespace are answered to scopes with other stores (a tenants file's cache
    /// group): their URLs name the store of the scope that made them, so the scope's own store
    /// is not part of what they are cached by (the enrichment's base URL still is).
    public var sharesResultsAcrossStores = false
    /// Claims bytes from the scope's download budget as its media arrives (see
    /// `FetchRequest.allowance`); nil: no budget.
    public var downloadAllowance: (@Sendable (_ bytes: Int) -> Bool)?

    public init(name: String = "", store: (any MediaStore)? = nil, allowedHosts: HostAllowlist? = nil,
                limits: MediaLimits? = nil, cacheNamespace: String = "") {
        self.name = name
        self.store = store
        self.allowedHosts = allowedHosts
        self.limits = limits
        self.cacheNamespace = cacheNamespace
    }

    public static let unscoped = EnrichmentScope()
}
