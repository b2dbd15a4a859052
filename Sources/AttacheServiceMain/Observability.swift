import AttacheCommandLine
import AttacheOperations
import AttacheHTTPKit
import Logging
import Metrics
import OTel
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
                     metadataProvider: traces == nil ? nil : OTel.makeLoggingMetadataProvider())
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
/// exporter (`OTEL_TRACES_EXPORTER=otlp` or `console`), and not `OTEL_SDK_DISABLED=true`. Off, no
/// tracer is bootstrapped and a payload costs one check. swift-otel reads the rest (the sampler,
/// the service name, the batch processor's delays, headers, TLS); metrics stay Prometheus's and
/// logs stay on stderr, carrying the trace and span ids.
func bootstrapTracing() throws -> (any Service)? {
    let exporter = environment("OTEL_TRACES_EXPORTER")
    let wanted = environment("OTEL_EXPORTER_OTLP_ENDPOINT") != nil || environment("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != nil
        || (exporter != nil && exporter != "none")
    guard wanted, environment("OTEL_SDK_DISABLED")?.lowercased() != "true" else { return nil }
    var configuration = OTel.Configuration.default
    configuration.serviceName = "attache"
    configuration.metrics.enabled = false
    configuration.logs.enabled = false
    // The batch processor exports one batch per tick, on its schedule or when its queue fills: at
    // the specification's 2,048 and 512 a relay enriching 10,000 payloads a second (two spans
    // each) dropped two spans in three. Each tick now exports the whole queue, which holds a few
    // seconds of that rate; OTEL_BSP_MAX_QUEUE_SIZE and OTEL_BSP_MAX_EXPORT_BATCH_SIZE still rule.
    configuration.traces.batchSpanProcessor.maxQueueSize = 8192
    configuration.traces.batchSpanProcessor.maxExportBatchSize = 8192
    let backend = try OTel.makeTracingBackend(configuration: configuration)
    PayloadTrace.bootstrap(backend.factory)
    return backend.service
}
