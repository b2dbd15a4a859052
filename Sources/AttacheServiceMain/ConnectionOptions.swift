import ArgumentParser
import AttacheCommandLine
import AttacheHTTPKit
import AttacheHTTPService
import AttacheRelay
import AttacheSupport
import Configuration

/// What slow, idle or numerous clients may take of a long-running door, for `serve` and `relay`
/// alike: the settings of `ConnectionLimits`, each door with its own defaults.
struct ConnectionOptionGroup: ParsableArguments, FlagGroup {
    private static let defaults = ConnectionLimits()
    private static var idleDefaults: String {
        let text = { (limits: ConnectionLimits) in limits.idleTimeout.map(DurationText.format) ?? "never" }
        return "default \(text(ServerConfiguration().connections)) for serve, \(text(RelayConfiguration().connections)) for relay, where 0 keeps it open"
    }

    @Option(name: .setting(.headerTimeout), help: .setting(.headerTimeout, "Time an HTTP/1.1 connection has to send a request's headers, from its start",
                                                           "default \(DurationText.format(defaults.headerTimeout))"),
            transform: parseDuration)
    var headerTimeout: Duration?

    @Option(name: .setting(.bodyTimeout), help: .setting(.bodyTimeout, "Time a request has to send its body, after its headers (HTTP/1.1; the relay's HTTP/2 streams too); also the longest a client may take none of an answer",
                                                         "default \(DurationText.format(defaults.bodyTimeout))"),
            transform: parseDuration)
    var bodyTimeout: Duration?

    @Option(name: .setting(.idleTimeout), help: .setting(.idleTimeout, "Time a client's connection may sit idle with no request in flight before it is closed",
                                                         idleDefaults),
            transform: parseDuration)
    var idleTimeout: Duration?

    @Option(name: .setting(.maxConnections), help: .setting(.maxConnections, "Connections open at once; past that, new ones are refused (serve answers their requests 503, the relay closes them)",
                                                            "default \(defaults.maxConnections)"))
    var maxConnections: Int?

    func flags(into flags: inout Flags) {
        flags.set(.headerTimeout, headerTimeout)
        flags.set(.bodyTimeout, bodyTimeout)
        flags.set(.idleTimeout, idleTimeout)
        flags.set(.maxConnections, maxConnections)
    }
}

extension ConnectionLimits {
    /// The door's limits (`defaults`: its own), with what the settings name in their place; an
    /// idle timeout of 0 keeps a connection open until its client closes it.
    init(reader: ConfigReader, defaults: ConnectionLimits) throws {
        self = defaults
        headerTimeout = try reader.duration(.headerTimeout, default: headerTimeout)
        bodyTimeout = try reader.duration(.bodyTimeout, default: bodyTimeout)
        maxConnections = try reader.int(.maxConnections, default: maxConnections, in: 1...1_000_000)
        let idle = try reader.duration(.idleTimeout, default: idleTimeout ?? .zero, positive: false)
        idleTimeout = idle > .zero ? idle : nil
    }
}
