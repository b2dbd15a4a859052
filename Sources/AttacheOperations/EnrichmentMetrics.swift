import Attache
import AttacheEnrichment
import Metrics
import Synchronization

/// The service's metrics, made with an injected factory (tests use their own registry; the
/// executable bootstraps Prometheus). Labels are bounded: outcomes, reasons, stages, events.
public struct EnrichmentMetrics: Sendable {
    private let handles: MetricHandles

    public init(factory: any MetricsFactory = MetricsSystem.factory) {
        handles = MetricHandles(factory: factory)
    }

    /// `tenant`: with a tenants file, every series of the payload also carries its tenant's name
    /// (names come from the file: a bounded label).
    public func request(_ report: EnrichReport, tenant: String? = nil) {
        handles.counter("attache_requests_total", ("outcome", report.outcome.rawValue),
                        ("reason", report.reason?.description ?? "none"), tenant: tenant).increment()
        handles.timer("attache_stage_duration_seconds", ("stage", "total"), tenant: tenant)
            .recordNanoseconds(Int64(report.elapsedMs * 1_000_000))
        if report.reason == .timeout {
            let late = max(0, report.elapsedMs - report.deadlineMs)
            handles.timer("attache_deadline_lateness_seconds", tenant: tenant).recordNanoseconds(Int64(late * 1_000_000))
        }
        for a in report.attachments {
            if a.wasFetched {
                let stages = [("dns", a.timings.dns), ("connect", a.timings.connect), ("first_byte", a.timings.firstByte),
                              ("download", a.timings.download), ("inspect", a.timings.inspect), ("render", a.timings.render),
                              ("store", a.timings.store)]
                for (stage, ms) in stages where ms > 0 {
                    handles.timer("attache_stage_duration_seconds", ("stage", stage), tenant: tenant)
                        .recordNanoseconds(Int64(ms * 1_000_000))
                }
                handles.counter("attache_fetches_total", ("reason", a.reason?.description ?? "ok"), tenant: tenant).increment()
                if let bytes = a.bytes { handles.counter("attache_fetched_bytes_total", tenant: tenant).increment(by: Int64(bytes)) }
            }
            if let cache = a.cache {
                handles.counter("attache_cache_total", ("event", cache.rawValue), tenant: tenant).increment()
            }
        }
    }

    /// A tenant's request refused before it began (429: its rate, concurrency or daily quota).
    public func refused(tenant: String, kind: String) {
        handles.counter("attache_tenant_refused_total", ("tenant", tenant), ("limit", kind)).increment()
    }

    /// A payload answered without a report (a queue message that is not a JSON object).
    public func request(outcome: Outcome, reason: Reason) {
        handles.counter("attache_requests_total", ("outcome", outcome.rawValue), ("reason", reason.description)).increment()
    }

    /// Warm-through works that finished after their payloads had been answered (a running count).
    public func warmed(_ total: Int) {
        handles.gauge("attache_cache_warmed").record(total)
    }

    public func inFlight(_ value: Int) {
        handles.gauge("attache_in_flight").record(value)
    }

    /// What the relay's upstream answered, by status (503 also when it could not be reached):
    /// a bounded label, the statuses Apple and Google document.
    public func relayed(status: Int) {
        handles.counter("attache_relay_upstream_total", ("status", String(status))).increment()
    }

    /// Client connections the relay closed at once: past its cap, overall or from one address.
    public func connectionRefused() {
        handles.counter("attache_relay_connections_refused_total").increment()
    }

    /// Streams a client reset (RST_STREAM), whatever state they were in.
    public func clientReset() {
        handles.counter("attache_relay_client_resets_total").increment()
    }

    /// Requests a client reset or closed its connection on before their end: none went upstream.
    public func abandoned() {
        handles.counter("attache_relay_abandoned_total").increment()
    }
}

/// Counters and timers made once per label set and kept. Making one through the factory checks its
/// name and looks it up in the registry, which cost more per payload than recording the value
/// (several per payload, through every door). The label sets are bounded (see above), so is this.
/// A handle is found by its name and label values alone, without building its dimensions (each
/// name always has the same label names): the lookup allocates nothing.
final class MetricHandles: Sendable {
    /// One series: a metric's name, up to two label values, and the tenant's.
    private struct Series: Hashable {
        var label: String
        var first: String?
        var second: String?
        var tenant: String?
    }

    private let factory: any MetricsFactory
    private let counters = Mutex<[Series: Counter]>([:])
    private let timers = Mutex<[Series: Timer]>([:])
    private let gauges = Mutex<[Series: Gauge]>([:])

    init(factory: any MetricsFactory) {
        self.factory = factory
    }

    /// `tenant` comes last among the dimensions, named `tenant`.
    func counter(_ label: String, _ first: (String, String)? = nil, _ second: (String, String)? = nil, tenant: String? = nil) -> Counter {
        Self.kept(in: counters, label, first, second, tenant) { Counter(label: label, dimensions: $0, factory: factory) }
    }

    func timer(_ label: String, _ first: (String, String)? = nil, tenant: String? = nil) -> Timer {
        Self.kept(in: timers, label, first, nil, tenant) { Timer(label: label, dimensions: $0, factory: factory) }
    }

    func gauge(_ label: String) -> Gauge {
        Self.kept(in: gauges, label, nil, nil, nil) { _ in Gauge(label: label, factory: factory) }
    }

    /// The handle kept for the series, made (with its dimensions) and kept on first use. Two
    /// threads making the same one at once both make it; the factory hands both the same registry
    /// entry, so either is kept.
    private static func kept<Handle: Sendable>(
        in store: borrowing Mutex<[Series: Handle]>, _ label: String, _ first: (String, String)?, _ second: (String, String)?,
        _ tenant: String?, make: ([(String, String)]) -> Handle
    ) -> Handle {
        let series = Series(label: label, first: first?.1, second: second?.1, tenant: tenant)
        if let made = store.withLock({ $0[series] }) { return made }
        let made = make([first, second, tenant.map { ("tenant", $0) }].compactMap { $0 })
        store.withLock { $0[series] = made }
        return made
    }
}
