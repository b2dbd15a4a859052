import Attache
import AttacheEnrichment
import AttacheFetch
import AttacheMedia
import AttacheSupport

/// One tenant of the tenants file: who may call (token hashes) and what their payloads may do.
public struct Tenant: Sendable, Equatable {
    public var name: String
    /// SHA-256 digests of the tenant's tokens (the file holds only these).
    public var tokenHashes: [[UInt8]]
    /// Media hosts allowed by name; nil: any host.
    public var hosts: HostAllowlist?
    /// Where its copies go below the store: `acme/` by default (the tenant's name).
    public var storePrefix: String
    /// Where devices read its copies; nil: the service's public base URL.
    public var publicBaseURL: String?
    /// The longest deadline its payloads may ask for; nil: the service's.
    public var maxBudget: Duration?
    /// Caps on its media (pixels, bytes); nil: the service's.
    public var limits: MediaLimits?
    /// Requests per second, with a burst; nil: no rate limit.
    public var rate: Rate?
    /// Payloads of this tenant enriched at once; nil: only the service's limit.
    public var concurrency: Int?
    /// Bytes downloaded per UTC day; nil: no quota.
    public var dailyDownloadBytes: Int?
    /// Tenants in the same group share cached results; nil: the tenant's own.
    public var cacheGroup: String?
    /// The apps whose relayed requests are this tenant's: APNs topics (bundle ids) and FCM project ids.
    public var apps: [String] = []

    public struct Rate: Sendable, Equatable {
        public var perSecond: Double
        public var burst: Int

        public init(perSecond: Double, burst: Int) {
            self.perSecond = perSecond
            self.burst = burst
        }
    }

    public init(name: String, tokenHashes: [[UInt8]], hosts: HostAllowlist? = nil, storePrefix: String? = nil,
                publicBaseURL: String? = nil, maxBudget: Duration? = nil, limits: MediaLimits? = nil, rate: Rate? = nil,
                concurrency: Int? = nil, dailyDownloadBytes: Int? = nil, cacheGroup: String? = nil) {
        self.name = name
        self.tokenHashes = tokenHashes
        self.hosts = hosts
        self.storePrefix = storePrefix ?? name + "/"
        self.publicBaseURL = publicBaseURL
        self.maxBudget = maxBudget
        self.limits = limits
        self.rate = rate
        self.concurrency = concurrency
        self.dailyDownloadBytes = dailyDownloadBytes
        self.cacheGroup = cacheGroup
    }

    /// The cache namespace: tenants share results only when the file puts them in one group.
    public var cacheNamespace: String { cacheGroup.map { "group:" + $0 } ?? "tenant:" + name }
}

/// Tokens as the tenants file keeps them: `sha256:` and the hex digest of the token's bytes.
public enum TenantToken {
    public static let hashPrefix = "sha256:"

    /// A new token: 32 random bytes, base64url, after `att_` (so a leaked one is recognisable).
    public static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return "att_" + Base64.urlEncode(bytes)
    }

    /// `sha256:<hex>` of a token.
    public static func hashLine(_ token: String) -> String {
        hashPrefix + ((try? SHA256Hasher.hex(Array(token.utf8))) ?? "")
    }

    /// The digest of `sha256:<64 hex>`, or nil.
    public static func digest(_ text: String) -> [UInt8]? {
        guard text.hasPrefix(hashPrefix) else { return nil }
        let hex = Array(text.utf8.dropFirst(hashPrefix.utf8.count))
        guard hex.count == 64 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(32)
        for i in stride(from: 0, to: 64, by: 2) {
            guard let hi = nibble(hex[i]), let lo = nibble(hex[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
        }
        return out
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x61...0x66: return c - 0x61 + 10
        case 0x41...0x46: return c - 0x41 + 10
        default: return nil
        }
    }
}
