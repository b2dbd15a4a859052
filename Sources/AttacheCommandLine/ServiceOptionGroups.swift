import ArgumentParser
import Attache
import AttacheEnrichment
import AttacheSupport
import Configuration

public enum LogFormat: String, ExpressibleByArgument, CaseIterable, Sendable { case text, json }

/// What the long-running commands (the service, the worker) set up first.
public struct ProcessOptionGroup: ParsableArguments, FlagGroup {
    @Option(name: .setting(.logFormat), help: .setting(.logFormat, "Log format: text or json", "default \(LogFormat.text.rawValue)"))
    var logFormat: LogFormat?

    @Option(name: .setting(.configFile), help: .setting(.configFile, "A file of settings as NAME=value lines (ATTACHE_PORT=8080), read under the environment: a flag wins, then a variable, then the file"))
    public var configFile: String?

    public init() {}

    public func flags(into flags: inout Flags) {
        flags.set(.logFormat, logFormat)
        flags.set(.configFile, configFile)
    }
}

extension LogFormat {
    public init(reader: ConfigReader) throws {
        self = try reader.choice(.logFormat, default: .text)
    }
}

/// Where a long-running command listens (the worker: its metrics port).
public struct HostOptionGroup: ParsableArguments, FlagGroup {
    /// Loopback: a service is reached from beyond its host only when told so.
    public static let defaultHost = "127.0.0.1"

    @Option(name: .setting(.host), help: .setting(.host, "Address to listen on (the worker's: its metrics port's)", "default \(defaultHost)"))
    var host: String?

    public init() {}

    public func flags(into flags: inout Flags) {
        flags.set(.host, host)
    }
}

/// The service's bearer tokens: what `/v1/*` and `/metrics` require, and what the lab requires
/// when it listens beyond loopback.
public struct TokenOptionGroup: ParsableArguments, FlagGroup {
    @Option(name: [.customLong("token"), .setting(.tokens)],
            help: .setting(.tokens, "Bearer token for /v1/* and /metrics (the lab: for its API); repeatable for rotation", "comma-separated; the flags replace it"))
    var token: [String] = []

    public init() {}

    public func flags(into flags: inout Flags) {
        flags.set(.tokens, token)
    }
}

/// The tenants file of the service, the worker and the relay.
public struct TenantsOptionGroup: ParsableArguments, FlagGroup {
    @Option(name: .setting(.tenantsFile), help: .setting(.tenantsFile, "A tenants file, YAML or JSON: each tenant's token hashes, media hosts, store prefix, caps, rate, concurrency and daily download quota (docs/tenants.md); re-read within seconds of an edit and on SIGHUP",
                                                         "none: one implicit tenant"))
    var tenantsFile: String?

    public init() {}

    public func flags(into flags: inout Flags) {
        flags.set(.tenantsFile, tenantsFile)
    }
}

/// `/healthz` and `/metrics` on a port of their own (the worker, the relay).
public struct MetricsPortOptionGroup: ParsableArguments, FlagGroup {
    @Option(name: .setting(.metricsPort), help: .setting(.metricsPort, "Serve /healthz and /metrics on this port", "none: off"))
    var metricsPort: Int?

    public init() {}

    public func flags(into flags: inout Flags) {
        flags.set(.metricsPort, metricsPort)
    }
}

/// The media cache of the long-running commands (the service, the worker, the relay).
public struct CacheOptionGroup: ParsableArguments, FlagGroup {
    private static let defaults = MediaCache.Configuration()

    @Option(name: .setting(.cacheTTL), help: .setting(.cacheTTL, "How long a rendered media URL is reused", "default \(DurationText.format(defaults.timeToLive)); 0 turns the cache off"),
            transform: parseDuration)
    var cacheTTL: Duration?

    @Option(name: .setting(.cacheEntries), help: .setting(.cacheEntries, "Most cached media URLs", "default \(defaults.maxEntries)"))
    var cacheEntries: Int?

    @Option(name: .setting(.warmThrough), help: .setting(.warmThrough, "Warm-through: how long a media's download and render may go on after its payload's deadline passed, so the next payloads find it cached",
                                                         "default \(DurationText.format(EnrichingDoor.warmThrough)); 0 turns it off"),
            transform: parseDuration)
    var warmThrough: Duration?

    public init() {}

    public func flags(into flags: inout Flags) {
        flags.set(.cacheTTL, cacheTTL)
        flags.set(.cacheEntries, cacheEntries)
        flags.set(.warmThrough, warmThrough)
    }
}
