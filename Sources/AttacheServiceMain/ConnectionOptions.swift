import ArgumentParser
import AttacheCommandLine
import AttacheHTTPKit

/// What slow or numerous clients may take of a long-running door, for `serve` and `relay` alike.
struct ConnectionOptionGroup: ParsableArguments {
    @Option(help: "Time an HTTP/1.1 connection has to send a request's headers, from its start [ATTACHE_HEADER_TIMEOUT, default 10s].", transform: parseDuration)
    var headerTimeout: Duration?

    @Option(help: "Time an HTTP/1.1 request has to send its body, after its headers [ATTACHE_BODY_TIMEOUT, default 10s].", transform: parseDuration)
    var bodyTimeout: Duration?

    @Option(help: "Connections open at once; past that, new ones are refused (serve answers their requests 503, the relay closes them) [ATTACHE_MAX_CONNECTIONS, default 4096].")
    var maxConnections: Int?

    /// Reads the timeouts and the cap into `limits` (whose idle timeout is the command's own).
    func read(_ settings: Settings, into limits: inout ConnectionLimits) throws {
        limits.headerTimeout = try settings.duration(headerTimeout, "ATTACHE_HEADER_TIMEOUT", option: "--header-timeout", default: limits.headerTimeout)
        limits.bodyTimeout = try settings.duration(bodyTimeout, "ATTACHE_BODY_TIMEOUT", option: "--body-timeout", default: limits.bodyTimeout)
        limits.maxConnections = try settings.int(maxConnections, "ATTACHE_MAX_CONNECTIONS", option: "--max-connections",
                                                 default: limits.maxConnections, in: 1...1_000_000)
    }
}
