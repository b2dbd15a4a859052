import Hummingbird
import Logging
import NIOCore
import Prometheus

/// `/healthz` (200 while `healthy()`, else 503) and `/metrics`: what a process without the enrich
/// routes (the queue worker) shows its orchestrator and Prometheus.
public func buildProbeApplication(host: String, port: Int, registry: PrometheusCollectorRegistry,
                                  healthy: @escaping @Sendable () -> Bool, logger: Logger) -> some ApplicationProtocol {
    let router = Router(context: AttacheRequestContext.self)
    router.get("/healthz") { _, _ in
        healthy() ? Probes.text(.ok, "ok\n") : Probes.text(.serviceUnavailable, "not connected\n")
    }
    Probes.registerMetrics(registry, on: router)
    return Application(router: router, configuration: .init(address: .hostname(host, port: port), serverName: "Attache"), logger: logger)
}
