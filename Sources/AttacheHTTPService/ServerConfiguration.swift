import AttacheHTTPKit
import Attache
import AttacheEnrichment
import AttacheStore
import AttacheTenants

/// Everything `attache serve` configures.
public struct ServerConfiguration: Sendable {
    public var host: String
    public var port: Int
    /// A request's budget from its `Attache-Deadline-Ms` (the default when it sends none).
    public var deadline: DeadlinePolicy
    /// Largest request body (a payload is at most 64 KiB).
    public var maxBodyBytes: Int
    /// Enrichments at once; past that, answer at once with the original and reason `overloaded`.
    public var maxInFlight: Int
    /// Bearer tokens accepted on `/v1/*` and `/metrics` (several, for rotation); empty: no auth.
    /// With tenants, they guard `/metrics` only: `/v1/enrich` takes the tenants' tokens.
    public var tokens: [String]
    /// Where `/media/<name>` reads from (the enrichment's media directory).
    public var mediaDirectory: String
    /// A bucket turns `/media` off (404: devices read the bucket) and is asked by `/readyz`.
    public var store: StoreLocation = .directory
    /// `/readyz` says 503 when the media directory's filesystem has less free space than this
    /// (default: the largest attachment, a 50 MB movie).
    public var minimumFreeBytes: Int
    /// Header, body and idle timeouts, and the connection cap.
    public var connections: ConnectionLimits

    public init(
        host: String = "127.0.0.1",
        port: Int = 8080,
        deadline: DeadlinePolicy = .service,
        maxBodyBytes: Int = 64 * 1024,
        maxInFlight: Int = 256,
        tokens: [String] = [],
        mediaDirectory: String = "./attache-media",
        minimumFreeBytes: Int = 50 * 1024 * 1024,
        connections: ConnectionLimits = ConnectionLimits()
    ) {
        self.host = host
        self.port = port
        self.deadline = deadline
        self.maxBodyBytes = maxBodyBytes
        self.maxInFlight = maxInFlight
        self.tokens = tokens
        self.mediaDirectory = mediaDirectory
        self.minimumFreeBytes = minimumFreeBytes
        self.connections = connections
    }
}
