import HTTPTypes
import Hummingbird
import NIOCore
import Prometheus

/// What every long-running door answers its orchestrator and Prometheus with: a plain-text status
/// and `/metrics` in the Prometheus text format.
public enum Probes {
    public static func registerMetrics(_ registry: PrometheusCollectorRegistry?, on router: some RouterMethods<AttacheRequestContext>) {
        router.get("/metrics") { _, _ in
            guard let registry else { throw HTTPError(.notFound) }
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer())))
        }
    }

    public static func text(_ status: HTTPResponse.Status, _ text: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/plain"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}

extension PrometheusMetricsFactory {
    /// The factory every process's `/metrics` is read from. Its duration buckets resolve the
    /// deadlines a sender picks (every half second to 3 s, the service's default; 10 s, the
    /// command line's; 30 s, the longest a header may ask): the default buckets jump from 2.5 s to
    /// 5 s and stop at 10 s, where a p99 near a 3 s deadline could not be told from 4.9 s. Lateness
    /// past a deadline is measured in milliseconds, with a bucket at the 250 ms the alert uses.
    public static func attache(registry: PrometheusCollectorRegistry) -> PrometheusMetricsFactory {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [5, 10, 25, 50, 100, 250, 500, 750].map { .milliseconds($0) }
            + [1000, 1500, 2000, 2500, 3000, 4000, 5000, 7500, 10_000, 15_000, 20_000, 30_000].map { .milliseconds($0) }
        factory.durationHistogramBuckets["attache_deadline_lateness_seconds"] =
            [1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500].map { .milliseconds($0) }
        return factory
    }
}
