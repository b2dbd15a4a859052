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
        let t: [(String, String)] = tenant.map { [("tenant", $0)] } ?? []
        handles.counter("attache_requests_total", [
            ("outcome", report.outcome.rawValue), ("reason", report.reason?.description ?? "none"),
        ] + t).increment()
        handles.timer("attache_stage_duration_seconds", [("stage", "total")] + t)
            .recordNanoseconds(Int64(report.elapsedMs * 1_000_000))
        if report.reason == .timeout {
            let late = max(0, report.elapsedMs - report.deadlineMs)
            handles.timer("attache_deadline_lateness_seconds", t).recordNanoseconds(Int64(late * 1_000_000))
        }
        for a in report.attachments {
            let stages = [("dns", a.timings.dns), ("connect", a.timings.connect), ("first_byte", a.timings.firstByte),
                          ("download", a.timings.download), ("inspect", a.timings.inspect), ("render", a.timings.render),
                          ("store", a.timings.store)]
            if a.wasFetched {
                for (stage, ms) in stages where ms > 0 {
                    handles.timer("attache_stage_duration_seconds", [("stage", stage)] + t)
                        .recordNanoseconds(Int64(ms * 1_000_000))
                }
                handles.counter("attache_fetches_total", [("reason", a.reason?.description ?? "ok")] + t)
                    .increment()
                if let bytes = a.bytes { handles.counter("attache_fetched_bytes_total", t).increment(by: Int64(bytes)) }
            }
            if let cache = a.cache {
                handles.counter("attache_cache_total", [("event", cache.rawValue)] + t).increment()
            }
        }
    }

    /// A tenant's request refused before it began (429: its rate, concurrency or daily quota).
    public func refused(tenant: String, kind: String) {
        handles.counter("attache_tenant_refused_total", [("tenant", tenant), ("limit", kind)]).increment()
    }

    /// A payload answered without a report (a queue message that is not a JSON object).
    public func request(outcome: Outcome, reason: Reason) {
        handles.counter("attache_requests_total", [("outcome", outcome.rawValue), ("reason", reason.description)]).increment()
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
        handles.counter("attache_relay_upstream_total", [("status", String(status))]).increment()
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
final class MetricHandles: Sendable {
    private let factory: any MetricsFactory
    private let counters = Mutex<[[String]: Counter]>([:])
    private let timers = Mutex<[[String]: Timer]>([:])
    private let gauges = Mutex<[[String]: Gauge]>([:])

    init(factory: any MetricsFactory) {
        self.factory = factory
    }

    func counter(_ label: String, _ dimensions: [(String, String)] = []) -> Counter {
        Self.kept(in: counters, Self.key(label, dimensions)) { Counter(label: label, dimensions: dimensions, factory: factory) }
    }

    func timer(_ label: String, _ dimensions: [(String, String)]) -> Timer {
        Self.kept(in: timers, Self.key(label, dimensions)) { Timer(label: label, dimensions: dimensions, factory: factory) }
    }

    func gauge(_ label: String) -> Gauge {
        Self.kept(in: gauges, [label]) { Gauge(label: label, factory: factory) }
    }

    /// The handle kept under `key`, made and kept on first use. Two threads making the same one at
    /// once both make it; the factory hands both the same registry entry, so either is kept.
    private static func kept<Handle: Sendable>(
        in store: borrowing Mutex<[[String]: Handle]>, _ key: [String], make: () -> Handle
    ) -> Handle {
        if let made = store.withLock({ $0[key] }) { return made }
        let made = make()
        store.withLock { $0[key] = made }
        return made
    }

    private static func key(_ label: String, _ dimensions: [(String, String)]) -> [String] {
        var key = [label]
        key.reserveCapacity(1 + 2 * dimensions.count)
        for (name, value) in dimensions {
            key.append(name)
            key.append(value)
        }
        return key
    }
}
