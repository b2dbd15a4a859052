import AttacheCommandLine
import AttacheOperations
import AttacheHTTPKit
import Logging
import Metrics
import AttacheTracing
import Prometheus
import ServiceLifecycle
import Tracing
internal import CMalloc
#if canImport(Glibc)
import Glibc
#endif

/// What a long-running command set up first: Prometheus's registry, and with traces on the service
/// that exports them (run first in the command's group, so that it is stopped last, after the
/// spans of the last answers).
struct Observability {
    let registry: PrometheusCollectorRegistry
    let tracing: (any Service)?

    var services: [any Service] { tracing.map { [$0] } ?? [] }
}

/// Logging, the allocator, Prometheus, and traces when the environment asks for them.
func bootstrapProcess(logFormat: LogFormat, tracing: Bool = true) throws -> Observability {
    let traces = tracing ? try bootstrapTracing() : nil
    bootstrapLogging(level: .info, json: logFormat == .json,
                     metadataProvider: traces == nil ? nil : TracingConfiguration.loggingMetadata)
    // Large buffers (bodies, decoded frames) always from mmap, returned to the system when
    // freed: glibc would otherwise raise its threshold after the first frees and keep them in
    // per-thread heaps, which under 64 concurrent 9 MP enrichments left RSS at 330 MB, not 270.
    _ = mallopt(M_MMAP_THRESHOLD, 128 * 1024)
    let registry = PrometheusCollectorRegistry()
    MetricsSystem.bootstrap(PrometheusMetricsFactory.attache(registry: registry))
    return Observability(registry: registry, tracing: traces)
}

/// OpenTelemetry traces, exported over OTLP/HTTP, when the standard variables ask for them: an
/// OTLP endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) or an
/// exporter (`OTEL_TRACES_EXPORTER=otlp` or `console`), and not `OTEL_SDK_DISABLED=true`
/// (`TracingConfiguration` reads the rest: the sampler, the service name, the batch's delay and
/// sizes, headers, TLS). Off, no tracer is bootstrapped and a payload costs one check. Metrics
/// stay Prometheus's; logs stay on stderr, carrying the trace and span ids.
func bootstrapTracing() throws -> (any Service)? {
    guard let configuration = try TracingConfiguration(variable: environment) else { return nil }
    let (tracer, exporter) = configuration.make(logger: Logger(label: "attache.tracing"))
    PayloadTrace.bootstrap(tracer)
    return exporter
}
