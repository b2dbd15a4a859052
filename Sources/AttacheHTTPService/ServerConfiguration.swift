import AttacheHTTPKit
import Attache
import AttacheEnrichment
import AttacheStore
import AttacheTenants

/// Everything `attache serve` configures beside its enrichment (whose configuration holds the
/// deadline policy and the store: `/media` serves the store's directory, and a bucket turns it off).
public struct ServerConfiguration: Sendable {
    public var host: String
    public var port: Int
    /// Largest request body (a payload is at most 64 KiB).
    public var maxBodyBytes: Int
    /// Enrichments at once; past that, answer at once with the original and reason `overloaded`.
    public var maxInFlight: Int
    /// Bearer tokens accepted on `/v1/*` and `/metrics` (several, for rotation); empty: no auth.
    /// With tenants, they guard `/metrics` only: `/v1/enrich` takes the tenants' tokens.
    public var tokens: [String]
    /// `/readyz` says 503 when the media directory's filesystem has less free space than this
    /// (default: the largest attachment, a 50 MB movie).
    public var minimumFreeBytes: Int
    /// Header, body and idle timeouts, and the connection cap.
    public var connections: ConnectionLimits

    public init(
        host: String = "127.0.0.1",
        port: Int = 8080,
        maxBodyBytes: Int = 64 * 1024,
        maxInFlight: Int = 256,
        tokens: [String] = [],
        minimumFreeBytes: Int = 50 * 1024 * 1024,
        connections: ConnectionLimits = ConnectionLimits()
    ) {
        self.host = host
        self.port = port
        self.maxBodyBytes = maxBodyBytes
        self.maxInFlight = maxInFlight
        self.tokens = tokens
        self.minimumFreeBytes = minimumFreeBytes
        self.connections = connections
    }
}
