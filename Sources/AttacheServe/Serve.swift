import ArgumentParser
import Configuration
import Attache
import AttacheCommandLine
import AttacheFetch
import AttacheMedia
import AttacheServer
import Logging
import Metrics
import Prometheus
import ServiceLifecycle
internal import CMalloc
#if canImport(Glibc)
import Glibc
#endif

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attache serve",
        abstract: "Run the enrichment service that push pipelines call per message.",
        discussion: """
        Routes: POST /v1/enrich (payload in, payload to send out; Attache-Deadline-Ms, X-Request-Id), \
        GET|HEAD /media/<name>, GET /healthz, GET /readyz, GET /metrics (Prometheus). \
        Every option can also come from the ATTACHE_* variable named in its help (lists comma-separated); \
        a flag wins over the environment, and a value that does not parse or is out of range stops the \
        start with an error naming it. SIGTERM/SIGINT: stop accepting, answer every \
        request in flight within its deadline, exit 0.
        """
    )

    @Option(help: "Address to listen on [ATTACHE_HOST, default 127.0.0.1].")
    var host: String?

    @Option(help: "Port [ATTACHE_PORT, default 8080].")
    var port: Int?

    @Option(help: "Enrichments at once before answering `overloaded` [ATTACHE_MAX_IN_FLIGHT, default 256].")
    var maxInFlight: Int?

    @Option(help: "Bearer token for /v1/* and /metrics; repeatable for rotation [ATTACHE_TOKENS, comma-separated].")
    var token: [String] = []

    @OptionGroup(title: "Cache options") var cache: CacheOptionGroup

    @Option(help: "Time a connection has to send a request's headers, from its start [ATTACHE_HEADER_TIMEOUT, default 10s].", transform: parseDuration)
    var headerTimeout: Duration?

    @Option(help: "Time a request has to send its body, after its headers [ATTACHE_BODY_TIMEOUT, default 10s].", transform: parseDuration)
    var bodyTimeout: Duration?

    @Option(help: "Time a keep-alive connection may sit idle between requests [ATTACHE_IDLE_TIMEOUT, default 60s].", transform: parseDuration)
    var idleTimeout: Duration?

    @Option(help: "Connections open at once; past that, requests are answered 503 and their connections closed [ATTACHE_MAX_CONNECTIONS, default 4096].")
    var maxConnections: Int?

    @OptionGroup var process: ProcessOptionGroup

    @OptionGroup(title: "Enrichment options") var enrich: EnrichOptionGroup

    func run() async throws {
        let settings = Settings.fromEnvironment
        let registry = try process.bootstrap(settings)
        let logger = Logger(label: "attache.server")

        var server = ServerConfiguration()
        server.host = settings.string(host, "ATTACHE_HOST") ?? server.host
        server.port = try settings.int(port, "ATTACHE_PORT", option: "--port", default: server.port, in: 0...65535)
        server.maxInFlight = try settings.int(maxInFlight, "ATTACHE_MAX_IN_FLIGHT", option: "--max-in-flight", default: server.maxInFlight, in: 1...1_000_000)
        server.tokens = settings.list(token, "ATTACHE_TOKENS")
        var limits = server.connections
        limits.headerTimeout = try settings.duration(headerTimeout, "ATTACHE_HEADER_TIMEOUT", option: "--header-timeout", default: limits.headerTimeout)
        limits.bodyTimeout = try settings.duration(bodyTimeout, "ATTACHE_BODY_TIMEOUT", option: "--body-timeout", default: limits.bodyTimeout)
        limits.idleTimeout = try settings.duration(idleTimeout, "ATTACHE_IDLE_TIMEOUT", option: "--idle-timeout", default: limits.idleTimeout)
        limits.maxConnections = try settings.int(maxConnections, "ATTACHE_MAX_CONNECTIONS", option: "--max-connections", default: limits.maxConnections, in: 1...1_000_000)
        server.connections = limits

        var options = try enrich.options(settings, defaultDeadline: DeadlinePolicy.service.default)
        server.deadline = options.deadlinePolicy
        server.mediaDirectory = options.mediaDirectory
        server.servesMedia = options.objectStore == nil
        options.cache = try cache.configuration(settings)

        let enrichment = try Enrichment(options: options, logger: logger)
        let app = buildApplication(configuration: server, enrichment: enrichment, registry: registry, logger: logger)
        logger.info("attache serve starting", metadata: [
            "attache.address": "\(server.host):\(server.port)", "attache.auth": "\(server.tokens.isEmpty ? "off" : "bearer")",
        ])
        // The enrichment is listed first so that it is stopped last, after the server has
        // answered what it was answering.
        let group = ServiceGroup(configuration: .init(
            services: [EnrichmentService(enrichment), app], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger
        ))
        try await group.run()
        logger.info("attache serve stopped")
    }
}

enum LogFormat: String, ExpressibleByArgument, CaseIterable { case text, json }

/// What the service and the worker set up first: logging, the allocator, Prometheus.
struct ProcessOptionGroup: ParsableArguments {
    @Option(help: "Log format: text or json [ATTACHE_LOG_FORMAT, default text].")
    var logFormat: LogFormat?

    func bootstrap(_ settings: Settings) throws -> PrometheusCollectorRegistry {
        let format = try settings.choice(logFormat, "ATTACHE_LOG_FORMAT", default: LogFormat.text)
        bootstrapLogging(level: .info, json: format == .json)
        // Large buffers (bodies, decoded frames) always from mmap, returned to the system when
        // freed: glibc would otherwise raise its threshold after the first frees and keep them in
        // per-thread heaps, which under 64 concurrent 9 MP enrichments left RSS at 330 MB, not 270.
        _ = mallopt(M_MMAP_THRESHOLD, 128 * 1024)
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        return registry
    }
}

/// The media cache of the long-running commands (the service, the worker).
struct CacheOptionGroup: ParsableArguments {
    @Option(help: "How long a rendered media URL is reused [ATTACHE_CACHE_TTL, default 1h; 0 turns the cache off].", transform: parseDuration)
    var cacheTTL: Duration?

    @Option(help: "Most cached media URLs [ATTACHE_CACHE_ENTRIES, default 10000].")
    var cacheEntries: Int?

    @Option(help: "Warm-through: how long a media's download and render may go on after its payload's deadline passed, so the next payloads find it cached [ATTACHE_WARM_THROUGH, default 30s; 0 turns it off].", transform: parseDuration)
    var warmThrough: Duration?

    func configuration(_ settings: Settings) throws -> MediaCache.Configuration? {
        let ttl = try settings.duration(cacheTTL, "ATTACHE_CACHE_TTL", option: "--cache-ttl", default: .seconds(3600), positive: false)
        guard ttl > .zero else { return nil }
        let entries = try settings.int(cacheEntries, "ATTACHE_CACHE_ENTRIES", option: "--cache-entries", default: 10_000, in: 1...100_000_000)
        let warm = try settings.duration(warmThrough, "ATTACHE_WARM_THROUGH", option: "--warm-through", default: .seconds(30), positive: false)
        return MediaCache.Configuration(timeToLive: ttl, maxEntries: entries, warmThrough: warm > .zero ? warm : nil)
    }
}

extension Settings {
    /// Every setting the flags leave out comes from the environment, read through
    /// swift-configuration; a bad value is an error at start, naming the variable.
    static var fromEnvironment: Settings {
        Settings(ConfigurationSource(ConfigReader(provider: EnvironmentVariablesProvider())))
    }
}

/// The `ATTACHE_*` variables through swift-configuration: `ATTACHE_MAX_IN_FLIGHT` is the key
/// `attache.max.in.flight`, which its environment provider spells back the same way.
struct ConfigurationSource: SettingsSource {
    let reader: ConfigReader

    init(_ reader: ConfigReader) {
        self.reader = reader
    }

    func value(of variable: String) -> String? {
        let key = ConfigKey(variable.lowercased().split(separator: "_").map(String.init))
        return reader.string(forKey: key, isSecret: variable == "ATTACHE_TOKENS").flatMap { $0.isEmpty ? nil : $0 }
    }
}
