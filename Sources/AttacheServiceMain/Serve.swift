import ArgumentParser
import AttacheHTTPKit
import Attache
import AttacheCommandLine
import AttacheEnrichment
import AttacheFetch
import AttacheHTTPService
import AttacheMedia
import AttacheOperations
import AttacheTenants
import Configuration
import Logging
import ServiceLifecycle
#if canImport(Glibc)
import Glibc
#endif

struct ServeCommand: LongRunningCommand {
    static let configuration = CommandConfiguration(
        commandName: "attache serve",
        abstract: "Run the enrichment service that push pipelines call per message.",
        usage: "attache serve [<options>]",
        discussion: """
        Routes: POST /v1/enrich (payload in, payload to send out; Attache-Deadline-Ms, X-Request-Id), \
        GET|HEAD /media/<name> (a tenant's: /media/<prefix><name>), GET /healthz, GET /readyz, GET /metrics (Prometheus). \
        Every option can also come from the ATTACHE_* variable named in its help (lists comma-separated); \
        a flag wins over the environment, and a value that does not parse or is out of range stops the \
        start with an error naming it. SIGTERM/SIGINT: stop accepting, answer every \
        request in flight within its deadline, exit 0.

        Examples:
          attache serve --port 8080 --allow-address 127.0.0.1/32
          attache serve --tenants-file tenants.yaml --public-base-url https://cdn.example.com/media
          curl -H 'Attache-Deadline-Ms: 1500' --data-binary @payload.json http://127.0.0.1:8080/v1/enrich
        """
    )

    @OptionGroup var host: HostOptionGroup

    @Option(name: .setting(.port), help: .setting(.port, "Port", "default \(ServerConfiguration().port)"))
    var port: Int?

    @Option(name: .setting(.maxInFlight), help: .setting(.maxInFlight, "Enrichments at once before answering `overloaded`", "default \(ServerConfiguration().maxInFlight)"))
    var maxInFlight: Int?

    @OptionGroup var token: TokenOptionGroup

    @OptionGroup var tenants: TenantsOptionGroup

    @OptionGroup(title: "Cache options") var cache: CacheOptionGroup

    @OptionGroup var connections: ConnectionOptionGroup

    @OptionGroup var process: ProcessOptionGroup

    @OptionGroup(title: "Enrichment options") var enrich: EnrichOptionGroup

    @OptionGroup(title: "Storage options") var storage: StorageOptionGroup

    var flags: Flags {
        Flags([host, token, tenants, cache, connections, process, enrich, storage]) { flags in
            flags.set(.port, port)
            flags.set(.maxInFlight, maxInFlight)
        }
    }

    /// What the service runs with: `run` starts it, `attache config serve` prints it.
    struct Setup {
        var server: ServerConfiguration
        var options: Enrichment.Configuration
        var logFormat: LogFormat
        var tenantsFile: String?
    }

    func configure(_ settings: Settings) throws -> Setup {
        let reader = settings.attache
        return Setup(server: try ServerConfiguration(reader: reader), options: try Enrichment.Configuration(settings: settings, door: .service),
                     logFormat: try LogFormat(reader: reader), tenantsFile: reader.text(.tenantsFile))
    }

    func run() async throws {
        try await reportingFailure("serve") { try await serve() }
    }

    private func serve() async throws {
        let setup = try setUp()
        let observed = try bootstrapProcess(logFormat: setup.logFormat)
        let registry = observed.registry
        let logger = Logger(label: "attache.server")
        let server = setup.server

        let (enrichment, tenants) = try await startEnrichment(setup.options, tenantsFile: setup.tenantsFile, logger: logger)
        let auth = tenants.map { "tenants (\($0.tenants.all.count) in \($0.path))" } ?? (server.tokens.isEmpty ? "off" : "bearer")
        // Said once the socket is bound: a port in use is then the one line that fails the start.
        let app = buildApplication(configuration: server, enrichment: enrichment, tenants: tenants?.tenants, registry: registry,
                                   logger: logger) { [server] _ in
            logger.info("attache serve listening", metadata: ["attache.address": "\(server.host):\(server.port)", "attache.auth": "\(auth)"])
        }
        // The enrichment is listed first so that it is stopped last, after the server has
        // answered what it was answering.
        let group = ServiceGroup(configuration: .init(
            services: observed.services + [EnrichmentService(enrichment)] + (tenants.map { [$0] } ?? []) + [app],
            gracefulShutdownSignals: [.sigterm, .sigint], logger: logger
        ))
        try await listening(on: ["\(server.host):\(server.port)"]) { try await group.run() }
        logger.info("attache serve stopped")
    }
}

extension ServerConfiguration {
    /// Where the service listens, who may call it, how much it takes on at once.
    init(reader: ConfigReader) throws {
        self.init()
        host = reader.text(.host, default: HostOptionGroup.defaultHost)
        port = try reader.int(.port, default: port, in: 0...65535)
        tokens = reader.list(.tokens)
        maxInFlight = try reader.int(.maxInFlight, default: maxInFlight, in: 1...1_000_000)
        connections = try ConnectionLimits(reader: reader, defaults: connections)
    }
}
