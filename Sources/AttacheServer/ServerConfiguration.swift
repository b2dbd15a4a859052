import Attache

/// Everything `attache serve` configures.
public struct ServerConfiguration: Sendable {
    public var host: String
    public var port: Int
    /// Deadline when a request sends no `Attache-Deadline-Ms`.
    public var defaultDeadline: Duration
    /// Longest deadline a request may ask for.
    public var maxDeadline: Duration
    /// Largest request body (a payload is at most 64 KiB).
    public var maxBodyBytes: Int
    /// Enrichments at once; past that, answer at once with the original and reason `overloaded`.
    public var maxInFlight: Int
    /// Bearer tokens accepted on `/v1/*` and `/metrics` (several, for rotation); empty: no auth.
    public var tokens: [String]
    /// Where `/media/<name>` reads from (the enrichment's media directory).
    public var mediaDirectory: String

    public init(
        host: String = "127.0.0.1",
        port: Int = 8080,
        defaultDeadline: Duration = .seconds(3),
        maxDeadline: Duration = .seconds(30),
        maxBodyBytes: Int = 64 * 1024,
        maxInFlight: Int = 256,
        tokens: [String] = [],
        mediaDirectory: String = "./attache-media"
    ) {
        self.host = host
        self.port = port
        self.defaultDeadline = defaultDeadline
        self.maxDeadline = maxDeadline
        self.maxBodyBytes = maxBodyBytes
        self.maxInFlight = maxInFlight
        self.tokens = tokens
        self.mediaDirectory = mediaDirectory
    }
}
