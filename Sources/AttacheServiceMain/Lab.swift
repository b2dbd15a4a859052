import ArgumentParser
import Attache
import AttacheCommandLine
import AttacheEnrichment
import AttacheLab
import AttacheSupport
import Configuration
import Foundation
import Logging
import ServiceLifecycle

struct LabCommand: LongRunningCommand {
    static let configuration = CommandConfiguration(
        commandName: "attache lab",
        abstract: "Open a page in the browser that runs a payload through the enrichment live: its timeline, result, device previews and a deadline sweep.",
        usage: "attache lab [<options>]",
        discussion: """
        Serves a page (every asset inside this binary) on 127.0.0.1 and a free port, printed at start; --open \
        opens it in the browser (xdg-open). Pick a sample payload (from --samples, by default ./Samples when it \
        is there) or paste your own, choose a deadline and a fault for the media, and run it: the stages stream to \
        the page as they happen, then the outcome, the payload as sent with what changed, the images made, and \
        previews of the notification on iOS and Android. A sweep runs deadlines × faults in parallel as a heat \
        map (CSV and SVG to download). Faults come from the lab's own origin on loopback, the only loopback \
        address its fetches may reach; every other fetch goes through the same address policy as the service. \
        On an address other than loopback the lab requires the service's token (--token or ATTACHE_TOKENS). \
        What runs make is kept in a temporary directory of the lab's own and served by it. See docs/lab.md.
        """
    )

    /// The flags' defaults are the lab's own, written once in `LabConfiguration`.
    private static let defaults = LabConfiguration()

    @Option(name: .setting(.host), help: .setting(.host, "Address to listen on; anything but loopback needs --token", "default \(defaults.host)"))
    var host: String?

    @Option(name: .setting(.port), help: .setting(.port, "Port; 0 is a free one, printed at start", "default \(defaults.port)"))
    var port: Int?

    @OptionGroup var token: TokenOptionGroup

    @Option(name: .setting(.samples), help: .setting(.samples, "A directory with payloads/*.json and media/ to offer as samples", "default ./Samples when it exists"))
    var samples: String?

    @Flag(help: "Open the page in the browser once the lab is listening.")
    var open = false

    @Option(name: .setting(.maxRuns), help: .setting(.maxRuns, "Payloads enriched at once, a sweep's runs included", "default \(defaults.maxRunsAtOnce)"))
    var maxRuns: Int?

    @Option(name: .setting(.maxSweepCells), help: .setting(.maxSweepCells, "Most runs in one sweep, deadlines × faults", "default \(defaults.maxSweepCells)"))
    var maxSweepCells: Int?

    @OptionGroup var process: ProcessOptionGroup

    @OptionGroup(title: "Enrichment options") var enrich: EnrichOptionGroup

    var flags: Flags {
        Flags([token, process, enrich]) { flags in
            flags.set(.host, host)
            flags.set(.port, port)
            flags.set(.samples, samples)
            flags.set(.maxRuns, maxRuns)
            flags.set(.maxSweepCells, maxSweepCells)
        }
    }

    struct Setup {
        var lab: LabConfiguration
        var options: Enrichment.Configuration
        var logFormat: LogFormat
        /// The environment or a configuration file names a store setting, which the lab does not use.
        var storeSettingsIgnored: Bool
    }

    func configure(_ settings: Settings) throws -> Setup {
        let reader = settings.attache
        let lab = try LabConfiguration(reader: reader)
        let options = try Enrichment.Configuration(settings: settings, door: .lab)
        let storeSettingsIgnored = [SettingKey.store, .mediaDir, .publicBaseURL].contains(where: settings.isGiven)
        return Setup(lab: lab, options: options, logFormat: try LogFormat(reader: reader), storeSettingsIgnored: storeSettingsIgnored)
    }

    func run() async throws {
        try await reportingFailure("lab") { try await lab() }
    }

    private func lab() async throws {
        var setup = try setUp()
        _ = try bootstrapProcess(logFormat: setup.logFormat, tracing: false)
        let logger = Logger(label: "attache.lab")
        if setup.storeSettingsIgnored {
            logger.notice("the lab keeps what it makes in a temporary directory of its own: the store and public base URL settings are not used")
        }
        // The port is known before the enrichment is made: its stored media's URLs name it.
        if setup.lab.port == 0 { setup.lab.port = try freePort(host: setup.lab.host) }
        let address = setup.lab.host.contains(":") ? "[\(setup.lab.host)]" : setup.lab.host
        let url = "http://\(address):\(setup.lab.port)"
        let lab = try Lab(configuration: setup.lab, options: setup.options, publicBase: url, logger: logger)
        defer { lab.shutdown() }
        let open = self.open
        let app = buildLabApplication(lab: lab, logger: logger) { _ in
            writeStdout(Array("attache lab: \(url)/\n".utf8))
            if open { openInBrowser(url + "/") }
        }
        let group = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await listening(on: [url.dropFirst("http://".count).description]) { try await group.run() }
    }
}

extension LabConfiguration {
    /// Where the lab listens and who may use it there, its samples, and its bounds on runs.
    init(reader: ConfigReader) throws {
        self.init()
        host = reader.text(.host, default: host)
        port = try reader.int(.port, default: port, in: 0...65535)
        tokens = reader.list(.tokens)
        guard isLoopback || !tokens.isEmpty else {
            throw SettingError(.host, .message("\(host) is not a loopback address: give --token (or \(SettingKey.tokens.variable)) so that only you can run payloads on the lab"))
        }
        if let samples = reader.text(.samples) {
            guard (try? directoryEntries(samples + "/payloads")) != nil else { throw SettingError(.samples, .message("\(samples) has no payloads/ directory")) }
            self.samples = samples
        } else if (try? directoryEntries("Samples/payloads")) != nil {
            samples = "Samples"
        }
        maxRunsAtOnce = try reader.int(.maxRuns, default: maxRunsAtOnce, in: 1...64)
        maxSweepCells = try reader.int(.maxSweepCells, default: maxSweepCells, in: 1...400)
    }
}

/// A port free on `host` now (the lab names it in its media URLs before it listens).
private func freePort(host: String) throws -> Int {
    let fd = socket(host.contains(":") ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw ValidationError("cannot open a socket to find a free port") }
    defer { close(fd) }
    var storage = sockaddr_storage()
    var length: socklen_t
    if host.contains(":") {
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        guard inet_pton(AF_INET6, host, &address.sin6_addr) == 1 else { throw ValidationError("--host \(host) is not an address") }
        length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: address, as: sockaddr_in6.self) }
    } else {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        let name = host == "localhost" ? "127.0.0.1" : host
        guard inet_pton(AF_INET, name, &address.sin_addr) == 1 else { throw ValidationError("--host \(host) is not an IPv4 or IPv6 address") }
        length = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: address, as: sockaddr_in.self) }
    }
    let bound = withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
    guard bound == 0 else { throw ValidationError("cannot listen on \(host): \(String(cString: strerror(errno)))") }
    var actual = sockaddr_storage()
    var actualLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
    _ = withUnsafeMutablePointer(to: &actual) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &actualLength) } }
    let port = withUnsafeBytes(of: &actual) { raw -> UInt16 in
        host.contains(":") ? raw.load(as: sockaddr_in6.self).sin6_port : raw.load(as: sockaddr_in.self).sin_port
    }
    return Int(UInt16(bigEndian: port))
}

/// `xdg-open URL`, when there is one; otherwise the printed URL is the way in.
private func openInBrowser(_ url: String) {
    let opener = Process()
    opener.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    opener.arguments = ["xdg-open", url]
    opener.standardOutput = FileHandle.nullDevice
    opener.standardError = FileHandle.nullDevice
    do {
        try opener.run()
    } catch {
        printError("attache lab: could not open a browser (\(error)); open \(url) yourself")
    }
}
