import ArgumentParser
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

@main
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attache serve",
        abstract: "Run the enrichment service that push pipelines call per message.",
        discussion: """
        Routes: POST /v1/enrich (payload in, payload to send out; Attache-Deadline-Ms, X-Request-Id), \
        GET|HEAD /media/<name>, GET /healthz, GET /readyz, GET /metrics (Prometheus). \
        Every option can also come from the environment: ATTACHE_HOST, ATTACHE_PORT, ATTACHE_MEDIA_DIR, \
        ATTACHE_PUBLIC_BASE_URL, ATTACHE_ALLOW_ADDRESSES (comma-separated CIDRs), ATTACHE_DEADLINE, \
        ATTACHE_MAX_IN_FLIGHT, ATTACHE_TOKENS (comma-separated), ATTACHE_CACHE_TTL, ATTACHE_CACHE_ENTRIES, \
        ATTACHE_HEADER_TIMEOUT, ATTACHE_BODY_TIMEOUT, ATTACHE_IDLE_TIMEOUT, ATTACHE_MAX_CONNECTIONS, ATTACHE_LOG_FORMAT. A flag wins over the environment. SIGTERM/SIGINT: stop accepting, answer every \
        request in flight within its deadline, exit 0.
        """
    )

    @Option(help: "Address to listen on [ATTACHE_HOST, default 127.0.0.1].")
    var host: String?

    @Option(help: "Port [ATTACHE_PORT, default 8080].")
    var port: Int?

    @Option(help: "Media directory, also served under /media [ATTACHE_MEDIA_DIR, default ./attache-media].")
    var mediaDir: String?

    @Option(help: "Base URL for media URLs, e.g. https://cdn.example.com/media or http://HOST:PORT/media [ATTACHE_PUBLIC_BASE_URL].")
    var publicBaseURL: String?

    @Option(help: "Allow connections to this network (CIDR); repeatable [ATTACHE_ALLOW_ADDRESSES].", transform: parseCIDR)
    var allowAddress: [CIDR] = []

    @Option(help: "Deadline when a request sends no Attache-Deadline-Ms [ATTACHE_DEADLINE, default 3s].", transform: parseDuration)
    var deadline: Duration?

    @Option(help: "What to answer when the deadline passes: original or best-attempt.")
    var onTimeout: TimeoutPolicy = .original

    @Option(help: "Enrichments at once before answering `overloaded` [ATTACHE_MAX_IN_FLIGHT, default 256].")
    var maxInFlight: Int?

    @Option(help: "Bearer token for /v1/* and /metrics; repeatable for rotation [ATTACHE_TOKENS].")
    var token: [String] = []

    @Option(help: "How long a rendered media URL is reused [ATTACHE_CACHE_TTL, default 1h; 0 turns the cache off].", transform: parseDuration)
    var cacheTTL: Duration?

    @Option(help: "Most cached media URLs [ATTACHE_CACHE_ENTRIES, default 10000].")
    var cacheEntries: Int?

    @Option(help: "Media fetched and rendered at once; bounds memory [ATTACHE_MAX_MEDIA_JOBS, default 32].")
    var maxMediaJobs: Int?

    @Option(help: "HTTP proxy for media fetches [ATTACHE_PROXY]; proxy environment variables are ignored. Through a proxy the address policy cannot see where a request goes: targets named by a private address literal are refused, names are resolved by the proxy, which must enforce its own rules.")
    var proxy: String?

    @Option(help: "Time a connection has to send a request's headers, from its start [ATTACHE_HEADER_TIMEOUT, default 10s].", transform: parseDuration)
    var headerTimeout: Duration?

    @Option(help: "Time a request has to send its body, after its headers [ATTACHE_BODY_TIMEOUT, default 10s].", transform: parseDuration)
    var bodyTimeout: Duration?

    @Option(help: "Time a keep-alive connection may sit idle between requests [ATTACHE_IDLE_TIMEOUT, default 60s].", transform: parseDuration)
    var idleTimeout: Duration?

    @Option(help: "Connections open at once; past that, requests are answered 503 and their connections closed [ATTACHE_MAX_CONNECTIONS, default 4096].")
    var maxConnections: Int?

    @Option(help: "Thumbnail longest edge.")
    var thumbnailSize: Int = 320

    @Option(help: "Display copy longest edge.")
    var displaySize: Int = 1080

    @Option(help: "APNs payload budget in bytes.")
    var maxPayloadBytes: Int = 4096

    @Option(help: "Movie poster frames: fast or exact.")
    var poster: PosterMode = .fast

    @Option(help: "Log format: text or json [ATTACHE_LOG_FORMAT].")
    var logFormat: LogFormat?

    enum LogFormat: String, ExpressibleByArgument { case text, json }

    func run() async throws {
        let format = logFormat ?? environment("ATTACHE_LOG_FORMAT").flatMap(LogFormat.init) ?? .text
        bootstrapLogging(level: .info, json: format == .json)
        // Large buffers (bodies, decoded frames) always from mmap, returned to the system when freed:
        // glibc would otherwise raise its threshold after the first frees and keep them in
        // per-thread heaps, which under 64 concurrent 9 MP enrichments left RSS at 330 MB, not 270.
        _ = mallopt(M_MMAP_THRESHOLD, 128 * 1024)
        let logger = Logger(label: "attache.server")
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))

        var server = ServerConfiguration()
        server.host = host ?? environment("ATTACHE_HOST") ?? server.host
        server.port = try port ?? environment("ATTACHE_PORT").map { guard let p = Int($0) else { throw ValidationError("ATTACHE_PORT is not a number") }; return p } ?? server.port
        server.defaultDeadline = try deadline ?? environment("ATTACHE_DEADLINE").map(parseDuration) ?? server.defaultDeadline
        server.maxInFlight = maxInFlight ?? environment("ATTACHE_MAX_IN_FLIGHT").flatMap(Int.init) ?? server.maxInFlight
        server.tokens = token + (environment("ATTACHE_TOKENS")?.split(separator: ",").map(String.init) ?? [])
        server.mediaDirectory = mediaDir ?? environment("ATTACHE_MEDIA_DIR") ?? server.mediaDirectory
        var limits = server.connections
        limits.headerTimeout = try headerTimeout ?? environment("ATTACHE_HEADER_TIMEOUT").map(parseDuration) ?? limits.headerTimeout
        limits.bodyTimeout = try bodyTimeout ?? environment("ATTACHE_BODY_TIMEOUT").map(parseDuration) ?? limits.bodyTimeout
        limits.idleTimeout = try idleTimeout ?? environment("ATTACHE_IDLE_TIMEOUT").map(parseDuration) ?? limits.idleTimeout
        limits.maxConnections = maxConnections ?? environment("ATTACHE_MAX_CONNECTIONS").flatMap(Int.init) ?? limits.maxConnections
        guard limits.maxConnections > 0, limits.headerTimeout > .zero, limits.bodyTimeout > .zero, limits.idleTimeout > .zero else {
            throw ValidationError("timeouts and --max-connections must be positive")
        }
        server.connections = limits

        var options = EnrichmentOptions()
        options.mediaDirectory = server.mediaDirectory
        options.publicBaseURL = publicBaseURL ?? environment("ATTACHE_PUBLIC_BASE_URL")
        options.allowedAddresses = allowAddress + (try environmentAllowances())
        options.deadline = server.defaultDeadline
        options.onTimeout = onTimeout
        options.thumbnailSize = thumbnailSize
        options.displaySize = displaySize
        options.maxPayloadBytes = maxPayloadBytes
        options.posterMode = poster
        options.proxy = proxy ?? environment("ATTACHE_PROXY")
        options.maxMediaJobs = maxMediaJobs ?? environment("ATTACHE_MAX_MEDIA_JOBS").flatMap(Int.init) ?? options.maxMediaJobs
        let ttl = try cacheTTL ?? environment("ATTACHE_CACHE_TTL").map(parseDuration) ?? .seconds(3600)
        if ttl > .zero {
            options.cache = MediaCache.Configuration(timeToLive: ttl, maxEntries: cacheEntries ?? environment("ATTACHE_CACHE_ENTRIES").flatMap(Int.init) ?? 10_000)
        }

        let enrichment = try Enrichment(options: options, logger: logger)
        let app = buildApplication(configuration: server, enrichment: enrichment, registry: registry, logger: logger)
        logger.info("attache serve starting", metadata: [
            "attache.address": "\(server.host):\(server.port)", "attache.auth": "\(server.tokens.isEmpty ? "off" : "bearer")",
        ])
        let group = ServiceGroup(configuration: .init(
            services: [app], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger
        ))
        try await group.run()
        enrichment.shutdown()
        logger.info("attache serve stopped")
    }
}
