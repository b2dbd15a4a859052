import AttacheHTTPKit
import Attache
import AttacheEnrichment
import AttacheOperations
import AttacheTenants
import AttachePayload
import AttacheStore
import Hummingbird
import Logging
import NIOCore
import Prometheus

/// The service as an application: what `attache serve` runs and what the tests drive.
public func buildApplication(
    configuration: ServerConfiguration,
    enrichment: Enrichment,
    tenants: Tenants? = nil,
    registry: PrometheusCollectorRegistry? = nil,
    metrics: EnrichmentMetrics = EnrichmentMetrics(),
    logger: Logger = Logger(label: "attache.server"),
    onServerRunning: @escaping @Sendable (any Channel) async -> Void = { _ in }
) -> any ApplicationProtocol {
    let connections = Connections()
    let router = buildRouter(configuration: configuration, enrichment: enrichment, tenants: tenants, registry: registry,
                             metrics: metrics, connections: connections)
    let limits = configuration.connections
    func application(_ responder: some HTTPResponder<AttacheRequestContext>) -> any ApplicationProtocol {
        Application(
            responder: responder,
            server: .http1(configuration: .init(additionalChannelHandlers: [ConnectionGuard(limits: limits, connections: connections)])),
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "Attache"),
            onServerRunning: onServerRunning,
            logger: logger
        )
    }
    // With a tracer bootstrapped, each request gets a server span (under its `traceparent`), the
    // parent of its payload's; without one, the router answers alone.
    let responder = router.buildResponder()
    return PayloadTrace.isOn ? application(ServerSpanResponder(base: responder)) : application(responder)
}

public func buildRouter(
    configuration: ServerConfiguration,
    enrichment: Enrichment,
    tenants: Tenants? = nil,
    registry: PrometheusCollectorRegistry? = nil,
    metrics: EnrichmentMetrics = EnrichmentMetrics()
) -> Router<AttacheRequestContext> {
    buildRouter(configuration: configuration, enrichment: enrichment, tenants: tenants, registry: registry, metrics: metrics,
                connections: Connections())
}

func buildRouter(
    configuration: ServerConfiguration,
    enrichment: Enrichment,
    tenants: Tenants?,
    registry: PrometheusCollectorRegistry?,
    metrics: EnrichmentMetrics,
    connections: Connections
) -> Router<AttacheRequestContext> {
    let router = Router(context: AttacheRequestContext.self)
    var routes: [(path: String, methods: [HTTPRequest.Method])] = [("/v1/enrich", [.post]), ("/healthz", [.get]), ("/readyz", [.get]),
                                                                  ("/metrics", [.get]), ("/openapi.yaml", [.get])]
    if enrichment.storage.location.isLocal { routes.append(("/media/**", [.get, .head])) }
    router.add(middleware: MethodNotAllowed(routes))
    // Authentication is decided on the route that matched, not on the path's spelling: the router
    // treats `//v1/enrich`, `/metrics/` and `//metrics` as these routes, so the guard sits on them.
    let guarded = router.group().add(middleware: BearerAuth(tokens: configuration.tokens))
    let controller = EnrichController(configuration: configuration, enrichment: enrichment, tenants: tenants, metrics: metrics,
                                      connections: connections)
    if let tenants {
        // Each tenant's tokens open /v1/enrich for that tenant; the service's own open /metrics,
        // which carries every tenant's labels.
        controller.register(on: router.group().add(middleware: TenantAuth(tenants: tenants)))
    } else {
        controller.register(on: guarded)
    }
    let health = HealthController(enrichment: enrichment, mediaDirectory: enrichment.storage.directory,
                                  minimumFreeBytes: configuration.minimumFreeBytes, store: enrichment.storage.location,
                                  registry: registry)
    health.register(on: router)
    health.registerMetrics(on: guarded)
    // With an object store, devices read the bucket (or its CDN): there is nothing to serve here.
    if enrichment.storage.location.isLocal { MediaController(directory: enrichment.storage.directory).register(on: router) }
    return router
}
