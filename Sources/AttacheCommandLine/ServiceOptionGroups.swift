import ArgumentParser
import Attache
import AttacheEnrichment

public enum LogFormat: String, ExpressibleByArgument, CaseIterable, Sendable { case text, json }

/// What the long-running commands (the service, the worker) set up first.
public struct ProcessOptionGroup: ParsableArguments {
    @Option(help: "Log format: text or json [ATTACHE_LOG_FORMAT, default text].")
    var logFormat: LogFormat?

    @Option(help: "A file of settings as NAME=value lines (ATTACHE_PORT=8080), read under the environment: a flag wins, then a variable, then the file [ATTACHE_CONFIG_FILE].")
    public var configFile: String?

    public init() {}

    public func format(_ settings: Settings) throws -> LogFormat {
        try settings.choice(logFormat, "ATTACHE_LOG_FORMAT", default: LogFormat.text)
    }
}

/// Where a long-running command listens (the worker: its metrics port).
public struct HostOptionGroup: ParsableArguments {
    @Option(help: "Address to listen on (the worker's: its metrics port's) [ATTACHE_HOST, default 127.0.0.1].")
    var host: String?

    public init() {}

    public func host(_ settings: Settings) -> String {
        settings.string(host, "ATTACHE_HOST", default: "127.0.0.1")
    }
}

/// The service's bearer tokens: what `/v1/*` and `/metrics` require, and what the lab requires
/// when it listens beyond loopback.
public struct TokenOptionGroup: ParsableArguments {
    @Option(help: "Bearer token for /v1/* and /metrics (the lab: for its API); repeatable for rotation [ATTACHE_TOKENS, comma-separated].")
    var token: [String] = []

    public init() {}

    public func tokens(_ settings: Settings) -> [String] {
        settings.list(token, "ATTACHE_TOKENS")
    }
}

/// The tenants file of the service, the worker and the relay.
public struct TenantsOptionGroup: ParsableArguments {
    @Option(help: "A tenants file, YAML or JSON: each tenant's token hashes, media hosts, store prefix, caps, rate, concurrency and daily download quota (docs/tenants.md); re-read within seconds of an edit and on SIGHUP [ATTACHE_TENANTS_FILE; none: one implicit tenant].")
    var tenantsFile: String?

    public init() {}

    public func path(_ settings: Settings) -> String? {
        settings.string(tenantsFile, "ATTACHE_TENANTS_FILE")
    }
}

/// `/healthz` and `/metrics` on a port of their own (the worker, the relay).
public struct MetricsPortOptionGroup: ParsableArguments {
    @Option(help: "Serve /healthz and /metrics on this port (off by default) [ATTACHE_METRICS_PORT].")
    var metricsPort: Int?

    public init() {}

    /// Nil: no metrics port.
    public func port(_ settings: Settings) throws -> Int? {
        try settings.int(metricsPort, "ATTACHE_METRICS_PORT", option: "--metrics-port", in: 1...65535)
    }
}

/// How long a client's connection may sit with nothing in flight (the service, the relay: each
/// with its own default).
public struct IdleTimeoutOptionGroup: ParsableArguments {
    @Option(help: "Time a client's connection may sit idle with no request in flight before it is closed [ATTACHE_IDLE_TIMEOUT; default 60s for serve, 5m for relay, where 0 keeps it open].", transform: parseDuration)
    var idleTimeout: Duration?

    public init() {}

    public func timeout(_ settings: Settings, default value: Duration) throws -> Duration {
        try settings.duration(idleTimeout, "ATTACHE_IDLE_TIMEOUT", option: "--idle-timeout", default: value)
    }
}

/// The media cache of the long-running commands (the service, the worker, the relay).
public struct CacheOptionGroup: ParsableArguments {
    @Option(help: "How long a rendered media URL is reused [ATTACHE_CACHE_TTL, default 1h; 0 turns the cache off].", transform: parseDuration)
    var cacheTTL: Duration?

    @Option(help: "Most cached media URLs [ATTACHE_CACHE_ENTRIES, default 10000].")
    var cacheEntries: Int?

    @Option(help: "Warm-through: how long a media's download and render may go on after its payload's deadline passed, so the next payloads find it cached [ATTACHE_WARM_THROUGH, default 30s; 0 turns it off].", transform: parseDuration)
    var warmThrough: Duration?

    public init() {}

    /// The cache, or nil when its TTL is zero.
    public func configuration(_ settings: Settings) throws -> MediaCache.Configuration? {
        let defaults = MediaCache.Configuration()
        let ttl = try settings.duration(cacheTTL, "ATTACHE_CACHE_TTL", option: "--cache-ttl", default: defaults.timeToLive, positive: false)
        let entries = try settings.int(cacheEntries, "ATTACHE_CACHE_ENTRIES", option: "--cache-entries", default: defaults.maxEntries, in: 1...100_000_000)
        // On by default where it pays: processes that stay up for the next payload.
        let warm = try settings.duration(warmThrough, "ATTACHE_WARM_THROUGH", option: "--warm-through", default: .seconds(30), positive: false)
        guard ttl > .zero else { return nil }
        return MediaCache.Configuration(timeToLive: ttl, maxEntries: entries, warmThrough: warm > .zero ? warm : nil)
    }
}
