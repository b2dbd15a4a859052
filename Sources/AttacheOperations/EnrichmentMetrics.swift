import Attache
import AttacheEnrichment
import Metrics

/// The service's metrics, made with an injected factory (tests use their own registry; the
/// executable bootstraps Prometheus). Labels are bounded: outcomes, reasons, stages, events.
public struct EnrichmentMetrics: Sendable {
    let factory: any MetricsFactory

    public init(factory: any MetricsFactory = MetricsSystem.factory) {
        self.factory = factory
    }

    /// `tenant`: with a tenants file, every series of the payload also carries its tenant's name
    /// (names come from the file: a bounded label).
    public func request(_ report: EnrichReport, tenant: String? = nil) {
        let t: [(String, String)] = tenant.map { [("tenant", $0)] } ?? []
        Counter(label: "attache_requests_total", dimensions: [
            ("outcome", report.outcome.rawValue), ("reason", report.reason?.description ?? "none"),
        ] + t, factory: factory).increment()
        Timer(label: "attache_stage_duration_seconds", dimensions: [("stage", "total")] + t, factory: factory)
            .recordNanoseconds(Int64(report.elapsedMs * 1_000_000))
        if report.reason == .timeout {
            let late = max(0, report.elapsedMs - report.deadlineMs)
            Timer(label: "attache_deadline_lateness_seconds", dimensions: t, factory: factory).recordNanoseconds(Int64(late * 1_000_000))
        }
        for a in report.attachments {
            let stages = [("dns", a.timings.dns), ("connect", a.timings.connect), ("first_byte", a.timings.firstByte),
                          ("download", a.timings.download), ("inspect", a.timings.inspect), ("render", a.timings.render),
                          ("store", a.timings.store)]
            if a.wasFetched {
                for (stage, ms) in stages where ms > 0 {
                    Timer(label: "attache_stage_duration_seconds", dimensions: [("stage", stage)] + t, factory: factory)
                        .recordNanoseconds(Int64(ms * 1_000_000))
                }
                Counter(label: "attache_fetches_total", dimensions: [("reason", a.reason?.description ?? "ok")] + t, factory: factory)
                    .increment()
                if let bytes = a.bytes { Counter(label: "attache_fetched_bytes_total", dimensions: t, factory: factory).increment(by: Int64(bytes)) }
            }
            if let cache = a.cache {
                Counter(label: "attache_cache_total", dimensions: [("event", cache.rawValue)] + t, factory: factory).increment()
            }
        }
    }

    /// A tenant's request refused before it began (429: its rate, concurrency or daily quota).
    public func refused(tenant: String, kind: String) {
        Counter(label: "attache_tenant_refused_total", dimensions: [("tenant", tenant), ("limit", kind)], factory: factory).increment()
    }

    /// A payload answered without a report (a queue message that is not a JSON object).
    public func request(outcome: Outcome, reason: Reason) {
        Counter(label: "attache_requests_total", dimensions: [("outcome", outcome.rawValue), ("reason", reason.description)],
                factory: factory).increment()
    }

    /// Warm-through works that finished after their payloads had been answered (a running count).
    public func warmed(_ total: Int) {
        Gauge(label: "attache_cache_warmed", factory: factory).record(total)
    }

    public func inFlight(_ value: Int) {
        Gauge(label: "attache_in_flight", factory: factory).record(value)
    }

    /// What the relay's upstream answered, by status (503 also when it could not be reached):
    /// a bounded label, the statuses Apple and Google document.
    public func relayed(status: Int) {
        Counter(label: "attache_relay_upstream_total", dimensions: [("status", String(status))], factory: factory).increment()
    }

    /// Client connections the relay closed at once: past its cap, overall or from one address.
    public func connectionRefused() {
        Counter(label: "attache_relay_connections_refused_total", factory: factory).increment()
    }

    /// Streams a client reset (RST_STREAM), whatever state they were in.
    public func clientReset() {
        Counter(label: "attache_relay_client_resets_total", factory: factory).increment()
    }

    /// Requests a client reset or closed its connection on before their end: none went upstream.
    public func abandoned() {
        Counter(label: "attache_relay_abandoned_total", factory: factory).increment()
    }
}
