import Attache
import AttachePayload
import Hummingbird
import Logging
import Prometheus

/// The service as an application: what `attache serve` runs and what the tests drive.
public func buildApplication(
    configuration: ServerConfiguration,
    enrichment: Enrichment,
    registry: PrometheusCollectorRegistry? = nil,
    metrics: ServerMetrics = ServerMetrics(),
    logger: Logger = Logger(label: "attache.server")
) -> some ApplicationProtocol {
    let router = buildRouter(configuration: configuration, enrichment: enrichment, registry: registry, metrics: metrics)
    return Application(
        router: router,
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "Attache"),
        logger: logger
    )
}

public func buildRouter(
    configuration: ServerConfiguration,
    enrichment: Enrichment,
    registry: PrometheusCollectorRegistry? = nil,
    metrics: ServerMetrics = ServerMetrics()
) -> Router<BasicRequestContext> {
    let router = Router(context: BasicRequestContext.self)
    router.add(middleware: BearerAuth(tokens: configuration.tokens))
    EnrichController(configuration: configuration, enrichment: enrichment, metrics: metrics).register(on: router)
    MediaController(directory: configuration.mediaDirectory).register(on: router)
    HealthController(enrichment: enrichment, mediaDirectory: configuration.mediaDirectory, registry: registry).register(on: router)
    return router
}
