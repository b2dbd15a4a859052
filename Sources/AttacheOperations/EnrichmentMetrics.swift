import Attache
import AttacheEnrichment
import Metrics
import Synchronization

/// The service's metrics, made with an injected factory (tests use their own registry; the
/// executable bootstraps Prometheus). Labels are bounded: outcomes, reasons, stages, events.
public struct EnrichmentMetrics: Sendable {
    /// One reference: the doors copy this value into their closures, a retain per reference.
    private let handles: Handles

    public init(factory: any MetricsFactory = MetricsSystem.factory) {
        handles = Handles(factory: factory)
    }

    /// `tenant`: with a tenants file, every series of the payload also carries its tenant's name
    /// (names come from the file: a bounded label).
    public func request(_ report: EnrichReport, tenant: String? = nil) {
        handles.requests[RequestSeries(outcome: report.outcome, reason: report.reason, tenant: tenant)].increment()
        handles.stages[StageSeries(stage: "total", tenant: tenant)].recordNanoseconds(Int64(report.elapsedMs * 1_000_000))
        if report.reason == .timeout {
            let late = max(0, report.elapsedMs - report.deadlineMs)
            handles.lateness[tenant].recordNanoseconds(Int64(late * 1_000_000))
        }
        for a in report.attachments {
            if a.wasFetched {
                let stages = [("dns", a.timings.dns), ("connect", a.timings.connect), ("first_byte", a.timings.firstByte),
                              ("download", a.timings.download), ("inspect", a.timings.inspect), ("render", a.timings.render),
                              ("store", a.timings.store)]
                for (stage, ms) in stages where ms > 0 {
                    handles.stages[StageSeries(stage: stage, tenant: tenant)].recordNanoseconds(Int64(ms * 1_000_000))
                }
                handles.fetches[ReasonSeries(reason: a.reason, tenant: tenant)].increment()
                if let bytes = a.bytes { handles.fetchedBytes[tenant].increment(by: Int64(bytes)) }
            }
            if let cache = a.cache {
                handles.cacheEvents[CacheSeries(event: cache, tenant: tenant)].increment()
            }
        }
    }

    /// A tenant's request refused before it began (429: its rate, concurrency or daily quota).
    public func refused(tenant: String, kind: String) {
        handles.tenantRefusals[RefusalSeries(tenant: tenant, limit: kind)].increment()
    }

    /// A payload answered without a report (a queue message that is not a JSON object).
    public func request(outcome: Outcome, reason: Reason) {
        handles.requests[RequestSeries(outcome: outcome, reason: reason, tenant: nil)].increment()
    }

    /// Warm-through works that finished after their payloads had been answered (a running count).
    public func warmed(_ total: Int) {
        handles.gauges[.cacheWarmed].record(total)
    }

    public func inFlight(_ value: Int) {
        handles.gauges[.inFlight].record(value)
    }

    /// What the relay's upstream answered, by status (503 also when it could not be reached):
    /// a bounded label, the statuses Apple and Google document.
    public func relayed(status: Int) {
        handles.upstreamAnswers[status].increment()
    }

    /// Client connections the relay closed at once: past its cap, overall or from one address.
    public func connectionRefused() {
        handles.counters[.connectionsRefused].increment()
    }

    /// Streams a client reset (RST_STREAM), whatever state they were in.
    public func clientReset() {
        handles.counters[.clientResets].increment()
    }

    /// Requests a client did not finish: it reset them or closed its connection before their end,
    /// or an HTTP/2 stream's body was not in within the body timeout. None went upstream.
    public func abandoned() {
        handles.counters[.abandoned].increment()
    }
}

/// Every metric's handles, kept apart from `EnrichmentMetrics` so that a copy of it is one
/// reference.
private final class Handles: Sendable {
    let requests: MetricHandles<RequestSeries, Counter>
    let stages: MetricHandles<StageSeries, Timer>
    let lateness: MetricHandles<String?, Timer>
    let fetches: MetricHandles<ReasonSeries, Counter>
    let fetchedBytes: MetricHandles<String?, Counter>
    let cacheEvents: MetricHandles<CacheSeries, Counter>
    let tenantRefusals: MetricHandles<RefusalSeries, Counter>
    let upstreamAnswers: MetricHandles<Int, Counter>
    let gauges: MetricHandles<GaugeName, Gauge>
    let counters: MetricHandles<CounterName, Counter>

    init(factory: any MetricsFactory) {
        /// `dimensions`, then the tenant's, named `tenant` (the last dimension of every series
        /// that has one).
        @Sendable func labels(_ dimensions: [(String, String)], tenant: String?) -> [(String, String)] {
            dimensions + (tenant.map { [("tenant", $0)] } ?? [])
        }
        requests = MetricHandles { series in
            Counter(label: "attache_requests_total", dimensions: labels([("outcome", series.outcome.rawValue),
                                                                         ("reason", series.reason?.description ?? "none")],
                                                                        tenant: series.tenant), factory: factory)
        }
        stages = MetricHandles { series in
            Timer(label: "attache_stage_duration_seconds", dimensions: labels([("stage", series.stage)], tenant: series.tenant), factory: factory)
        }
        lateness = MetricHandles { tenant in Timer(label: "attache_deadline_lateness_seconds", dimensions: labels([], tenant: tenant), factory: factory) }
        fetches = MetricHandles { series in
            Counter(label: "attache_fetches_total", dimensions: labels([("reason", series.reason?.description ?? "ok")], tenant: series.tenant),
                    factory: factory)
        }
        fetchedBytes = MetricHandles { tenant in Counter(label: "attache_fetched_bytes_total", dimensions: labels([], tenant: tenant), factory: factory) }
        cacheEvents = MetricHandles { series in
            Counter(label: "attache_cache_total", dimensions: labels([("event", series.event.rawValue)], tenant: series.tenant), factory: factory)
        }
        tenantRefusals = MetricHandles { series in
            Counter(label: "attache_tenant_refused_total", dimensions: [("tenant", series.tenant), ("limit", series.limit)], factory: factory)
        }
        upstreamAnswers = MetricHandles { status in
            Counter(label: "attache_relay_upstream_total", dimensions: [("status", String(status))], factory: factory)
        }
        gauges = MetricHandles { name in Gauge(label: name.rawValue, factory: factory) }
        counters = MetricHandles { name in Counter(label: name.rawValue, factory: factory) }
    }
}

/// The series of `attache_requests_total`, and of the other metrics with labels, by what they
/// are counted by: enums compare and hash as small integers, where the label values they become
/// hashed as strings cost more per payload than the count itself.
private struct RequestSeries: Hashable, Sendable {
    var outcome: Outcome
    var reason: Reason?
    var tenant: String?
}

private struct StageSeries: Hashable, Sendable {
    var stage: String
    var tenant: String?
}

private struct ReasonSeries: Hashable, Sendable {
    var reason: Reason?
    var tenant: String?
}

private struct CacheSeries: Hashable, Sendable {
    var event: CacheEvent
    var tenant: String?
}

private struct RefusalSeries: Hashable, Sendable {
    var tenant: String
    var limit: String
}

/// The metrics without labels: one series each.
private enum GaugeName: String, Hashable, Sendable {
    case cacheWarmed = "attache_cache_warmed"
    case inFlight = "attache_in_flight"
}

private enum CounterName: String, Hashable, Sendable {
    case connectionsRefused = "attache_relay_connections_refused_total"
    case clientResets = "attache_relay_client_resets_total"
    case abandoned = "attache_relay_abandoned_total"
}

/// The handles of one metric, made once per series and kept. Making one through the factory
/// checks its name and looks it up in the registry, which cost more per payload than recording
/// the value (several per payload, through every door). The series are bounded (see above), so
/// is this. A series is made on its first use, so one never used is not exported.
private final class MetricHandles<Series: Hashable & Sendable, Handle: Sendable>: Sendable {
    private let kept = Mutex<[Series: Handle]>([:])
    private let make: @Sendable (Series) -> Handle

    init(make: @escaping @Sendable (Series) -> Handle) {
        self.make = make
    }

    /// The handle kept for the series, made and kept on first use. Two threads making the same
    /// one at once both make it; the factory hands both the same registry entry, so either is kept.
    subscript(series: Series) -> Handle {
        if let made = kept.withLock({ $0[series] }) { return made }
        let made = make(series)
        kept.withLock { $0[series] = made }
        return made
    }
}
