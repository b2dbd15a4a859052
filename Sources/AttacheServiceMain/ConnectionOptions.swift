import ArgumentParser
import AttacheCommandLine
import AttacheHTTPKit
import AttacheSupport
import Configuration

/// What slow or numerous clients may take of a long-running door, for `serve` and `relay` alike.
struct ConnectionOptionGroup: ParsableArguments, FlagGroup {
    private static let defaults = ConnectionLimits()

    @Option(name: .setting(.headerTimeout), help: .setting(.headerTimeout, "Time an HTTP/1.1 connection has to send a request's headers, from its start",
                                                           "default \(DurationText.format(defaults.headerTimeout))"),
            transform: parseDuration)
    var headerTimeout: Duration?

    @Option(name: .setting(.bodyTimeout), help: .setting(.bodyTimeout, "Time an HTTP/1.1 request has to send its body, after its headers",
                                                         "default \(DurationText.format(defaults.bodyTimeout))"),
            transform: parseDuration)
    var bodyTimeout: Duration?

    @Option(name: .setting(.maxConnections), help: .setting(.maxConnections, "Connections open at once; past that, new ones are refused (serve answers their requests 503, the relay closes them)",
                                                            "default \(defaults.maxConnections)"))
    var maxConnections: Int?

    func flags(into flags: inout Flags) {
        flags.set(.headerTimeout, headerTimeout)
        flags.set(.bodyTimeout, bodyTimeout)
        flags.set(.maxConnections, maxConnections)
    }
}

extension ConnectionLimits {
    /// The timeouts and the cap; the idle timeout's default is the door's own.
    init(reader: ConfigReader, idleTimeout: Duration) throws {
        self.init()
        headerTimeout = try reader.duration(.headerTimeout, default: headerTimeout)
        bodyTimeout = try reader.duration(.bodyTimeout, default: bodyTimeout)
        maxConnections = try reader.int(.maxConnections, default: maxConnections, in: 1...1_000_000)
        self.idleTimeout = try reader.duration(.idleTimeout, default: idleTimeout, positive: false)
    }
}
