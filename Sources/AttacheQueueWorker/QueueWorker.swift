import Attache
import AttacheEnrichment
import AttacheOperations
import AttachePayload
import AttacheSupport
import AttacheTenants
import Logging
import Metrics
import ServiceLifecycle
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

extension QueueWorker {
    /// Where the worker reads and writes, and how it consumes.
    public struct Configuration: Sendable {
        public var nats: NATSOptions
        public var inputStream = "ATTACHE_IN"
        public var inputSubject = "attache.in"
        /// The durable pull consumer every worker shares: each message goes to one of them.
        public var consumer = "attache"
        public var outputStream = "ATTACHE_OUT"
        public var outputSubject = "attache.out"
        /// Messages in flight at once (also the consumer's max ack pending, when it is made).
        public var concurrency = 64
        /// How long the stream waits for an ack before delivering again (to this or another worker).
        public var ackWait: Duration = .seconds(30)
        /// Deliveries before the stream gives up on a message.
        public var maxDeliver = 10
        /// How long a publish waits for the output stream's acknowledgement.
        public var publishTimeout: Duration = .seconds(5)

        public init(nats: NATSOptions) {
            self.nats = nats
        }

        /// The most a message is given: what the ack wait leaves after a publish that takes its
        /// longest (a second at least).
        public var longestBudget: Duration { max(.seconds(1), ackWait - publishTimeout - .seconds(1)) }

        /// The output stream must drop a republish for as long as a message can be redelivered.
        public var requiredDuplicateWindow: Duration { ackWait * maxDeliver }
    }
}

/// `attache worker`: takes payloads off a JetStream stream through a durable pull consumer that
/// every worker shares, enriches each under its own deadline (counted from when it was published),
/// publishes exactly one payload out per payload in — with `Nats-Msg-Id` set from the input's id,
/// so the output stream drops a republish after a crash — and acks the input only once that
/// publish is acknowledged. A graceful shutdown (SIGTERM) stops fetching, finishes what is in
/// flight within its deadlines, acks, and returns.
public struct QueueWorker: Service {
    public let configuration: QueueWorker.Configuration
    public let enrichment: Enrichment
    /// With a tenants file: each message names its tenant in an `Attache-Tenant` header.
    let tenants: Tenants?
    let metrics: EnrichmentMetrics
    let queueMetrics: QueueMetrics
    let logger: Logger
    let state: WorkerState

    /// `tenants`: the tenants file in force (nil: one implicit tenant), a live object beside the
    /// configuration as the enrichment is.
    public init(configuration: QueueWorker.Configuration, enrichment: Enrichment, tenants: Tenants? = nil,
                metrics: EnrichmentMetrics = EnrichmentMetrics(), state: WorkerState = WorkerState(),
                logger: Logger = Logger(label: "attache.worker")) {
        self.configuration = configuration
        self.enrichment = enrichment
        self.tenants = tenants
        self.metrics = metrics
        self.queueMetrics = QueueMetrics()
        self.state = state
        self.logger = logger
    }

    public func run() async throws {
        let c = configuration
        // One thread waits on fetches; publishes (each waits for the stream's ack) get their own,
        // so that neither waits behind decoding on the shared pool.
        let fetcher = BlockingPool(threads: 1, name: "nats-fetch")
        let publishers = BlockingPool(threads: min(max(2, c.concurrency / 4), 32), name: "nats-publish")
        let (connection, subscription, _) = try await fetcher.run { _ in try Self.connect(c, logger: logger) }
        state.connection.withLock { $0 = connection }
        defer { state.connection.withLock { $0 = nil } }
        logger.info("attache worker consuming", metadata: [
            "attache.stream": "\(c.inputStream)", "attache.consumer": "\(c.consumer)", "attache.output": "\(c.outputStream)",
        ])

        let progress = Progress()
        let (completions, completed) = AsyncStream<Void>.makeStream()
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                var started = 0
                var wake = completions.makeAsyncIterator()
                while !progress.stopping.load(ordering: .relaxed) {
                    let room = c.concurrency - (started - progress.finished.load(ordering: .acquiring))
                    if room <= 0 {
                        _ = await wake.next()
                        continue
                    }
                    let messages: [NATSMessage]
                    do {
                        // Short waits, so a shutdown is noticed within half a second.
                        messages = try await fetcher.run { _ in try subscription.fetch(batch: min(room, 256), timeout: .milliseconds(500)) }
                    } catch {
                        logger.warning("fetch failed; retrying", metadata: ["error": "\(error)"])
                        try? await Task.sleep(for: .seconds(1))
                        continue
                    }
                    for message in messages {
                        started += 1
                        group.addTask {
                            // With traces on, the payload's span goes under the publisher's
                            // context, from the message's headers (`traceparent`).
                            await PayloadTrace.within(contextFrom: { message.header($0) }) {
                                await handle(message, connection: connection, publishers: publishers,
                                             stopping: { progress.stopping.load(ordering: .relaxed) })
                            }
                            progress.finished.add(1, ordering: .releasing)
                            completed.yield()
                        }
                    }
                }
            }
        } onGracefulShutdown: {
            progress.stopping.store(true, ordering: .relaxed)
            completed.yield()
        }
        completed.finish()
        logger.info("attache worker stopped")
    }

    /// Connects, makes what is missing, binds the consumer; also returns the output stream's
    /// duplicate window as found (or made).
    static func connect(_ c: QueueWorker.Configuration, logger: Logger) throws -> (NATSConnection, NATSSubscription, outputWindow: Duration) {
        let connection = try NATSConnection(c.nats)
        _ = try connection.ensureStream(c.inputStream, subject: c.inputSubject, duplicateWindow: .seconds(120))
        let window = try connection.ensureStream(c.outputStream, subject: c.outputSubject,
                                                 duplicateWindow: c.requiredDuplicateWindow)
        if window < c.requiredDuplicateWindow {
            logger.warning("the output stream's duplicate window is shorter than ack wait × max deliver: a message redelivered after it may be published twice", metadata: [
                "attache.stream": "\(c.outputStream)", "attache.window_s": "\(window.seconds)",
                "attache.required_s": "\(c.requiredDuplicateWindow.seconds)",
            ])
        }
        let subscription = try connection.pullSubscribe(stream: c.inputStream, subject: c.inputSubject, durable: c.consumer,
                                                        ackWait: c.ackWait, maxDeliver: c.maxDeliver, maxAckPending: c.concurrency)
        return (connection, subscription, window)
    }

    /// One message in, one out, then the ack. `stopping`: whether the worker is shutting down (a
    /// payload waiting for a conversion then goes out as it is).
    func handle(_ message: NATSMessage, connection: NATSConnection, publishers: BlockingPool, stopping: @escaping @Sendable () -> Bool) async {
        let metadata = message.metadata
        let sourceID = message.header("Nats-Msg-Id").flatMap { $0.isEmpty ? nil : $0 }
            ?? metadata.map { String($0.streamSequence) } ?? "unknown"
        if !message.headersReadAsSent { warnHeadersParsedByLibrary() }
        let bytes = message.data
        queueMetrics.consumed.increment()
        if let metadata {
            if metadata.delivered > 1 { queueMetrics.redelivered.increment() }
            queueMetrics.lag.record(Int64(metadata.pending))
        }
        // Never past what the ack wait leaves for the publish: a message still being enriched when
        // the stream delivers it again would be done twice.
        let gate = AdmissionGate(tenants: tenants, policy: enrichment.deadlinePolicy.capped(at: configuration.longestBudget),
                                 metrics: metrics, door: "worker")
        var admission: Admission?, passReason: Reason?
        switch gate.admit(message.header(Self.tenantHeader).flatMap { tenants?.tenant(named: $0) }) {
        case .admitted(let admitted): admission = admitted
        case .unknownTenant: passReason = .unknownTenant
        case .refused(_, let refusal):
            // Back to the stream, delivered again after the wait its limit names (its slot here
            // goes to other tenants' messages meanwhile), except on the last delivery the stream
            // allows: then the original goes out (a payload is never lost to a limit).
            guard (message.metadata?.delivered ?? 1) >= configuration.maxDeliver else {
                message.nak(delay: .seconds(refusal.retryAfter))
                return
            }
            passReason = .tenantLimited
        }
        defer { admission?.leave() }
        let (policy, scope) = (admission?.policy ?? gate.policy, admission?.scope ?? .unscoped)
        let deadlineHeader = message.header(DeadlinePolicy.header)
        if DeadlinePolicy.isMalformed(deadlineHeader) {
            logger.warning("malformed Attache-Deadline-Ms header; the default deadline applies", metadata: [
                "attache.source_id": "\(sourceID)", "attache.header": "\(deadlineHeader ?? "")",
                "attache.default_ms": "\(Int(policy.default.milliseconds))",
            ])
        }
        let budget = policy.budget(header: deadlineHeader)
        let remaining = Self.remaining(budget: budget, publishedNs: metadata?.timestampNs)
        let out: [UInt8], outcome: String
        do throws(PayloadError) {
            // Already late (it waited in the stream, or this is a redelivery): the original, at once.
            let emission = if let passReason {
                try enrichment.passOn(bytes, reason: passReason)
            } else if remaining <= .zero {
                try enrichment.passOn(bytes, reason: .timeout)
            } else {
                await awaitingConversions(try await enrichment.enrich(bytes, identifier: sourceID, budget: remaining, scope: scope),
                                          of: message, identifier: sourceID, scope: scope, stopping: stopping)
            }
            gate.finish(emission, admission: admission, attributes: [
                "messaging.system": "nats", "messaging.operation.type": "process",
                "messaging.destination.name": configuration.inputSubject, "messaging.message.id": sourceID,
            ])
            (out, outcome) = (emission.bytes, emission.outcomeHeader)
        } catch {
            // Not a JSON object: it goes on as it came, once, never back to the stream.
            metrics.request(outcome: .fallback, reason: .invalidPayload)
            (out, outcome) = (bytes, Emission.outcomeHeader(.fallback, .invalidPayload))
        }
        // The publisher's trace context goes on with the payload, for whoever sends it.
        let traceContext = ["traceparent", "tracestate"].compactMap { name in message.header(name).map { (name, $0) } }
        let headers = [(Emission.outcomeHeaderName, outcome), ("Attache-Source-Id", sourceID), ("Nats-Msg-Id", sourceID),
                       (DeadlinePolicy.header, String(Int(budget.milliseconds)))] + traceContext
        let c = configuration
        do {
            let duplicate = try await publishers.run { _ in
                try connection.publish(c.outputSubject, out, headers: headers, timeout: c.publishTimeout)
            }
            (duplicate ? queueMetrics.duplicates : queueMetrics.published).increment()
            message.ack()
        } catch {
            // Not acked: delivered again (here or to another worker) after a pause; the output
            // stream drops the republish if this one did land.
            logger.warning("publish failed; the message will be redelivered", metadata: ["attache.source_id": "\(sourceID)", "error": "\(error)"])
            queueMetrics.publishFailures.increment()
            message.nak(delay: .seconds(1))
        }
    }

    /// nats.c's message did not have the layout the worker reads header blocks from (a libnats
    /// other than 3.4): headers then go through nats.c's parse, which misreads empty values.
    func warnHeadersParsedByLibrary() {
        guard !state.warnedHeaders.exchange(true, ordering: .relaxed) else { return }
        logger.warning("this libnats's messages cannot be read as they arrived; headers come from its own parse, which misreads a header with an empty value")
    }

    /// `first` with the conversions it went out without waited for (`Enrichment.awaitingConversions`):
    /// meanwhile the message is kept from redelivery by in-progress acks, one when the wait starts
    /// and each a third of the ack wait after the last; when the worker stops, the wait ends with
    /// `first`.
    func awaitingConversions(_ first: Emission, of message: NATSMessage, identifier: String, scope: EnrichmentScope,
                             stopping: @escaping @Sendable () -> Bool) async -> Emission {
        guard first.report.attachments.contains(where: \.conversionPending) else { return first }
        let enrichment = self.enrichment, interval = configuration.ackWait / 3
        return await withTaskGroup(of: Emission?.self) { group in
            group.addTask {
                await enrichment.awaitingConversions(first, bytes: message.data, identifier: identifier, scope: scope)
            }
            group.addTask {
                // At once: the deadline may have taken most of the ack wait already.
                message.inProgress()
                var last = ContinuousClock.now
                while !Task.isCancelled && !stopping() {
                    try? await Task.sleep(for: .milliseconds(100))
                    if last.duration(to: .now) >= interval {
                        message.inProgress()
                        last = .now
                    }
                }
                return nil
            }
            // The wait's answer; the watch ends first only when the worker stops, which cancels the
            // wait (it then answers `first`).
            var answer = first
            while let next = await group.next() {
                group.cancelAll()
                if let next { answer = next }
            }
            return answer
        }
    }

    /// The header a message names its tenant in.
    public static let tenantHeader = "Attache-Tenant"

    /// What is left of `budget` counted from the publish time (the server's clock; without
    /// metadata, from now).
    static func remaining(budget: Duration, publishedNs: Int64?, nowNs: Int64 = wallClockNs()) -> Duration {
        guard let publishedNs else { return budget }
        return budget - .nanoseconds(nowNs - publishedNs)
    }
}

/// The worker's own metrics, made once: every message touches several, and making one looks it up
/// in the registry under a lock.
struct QueueMetrics: Sendable {
    let consumed, redelivered, published, duplicates, publishFailures: Counter
    /// Messages still waiting for the consumer, as the last one delivered said.
    let lag: Gauge

    init(factory: any MetricsFactory = MetricsSystem.factory) {
        consumed = Counter(label: "attache_queue_consumed_total", factory: factory)
        redelivered = Counter(label: "attache_queue_redelivered_total", factory: factory)
        published = Counter(label: "attache_queue_published_total", factory: factory)
        duplicates = Counter(label: "attache_queue_duplicates_total", factory: factory)
        publishFailures = Counter(label: "attache_queue_publish_failures_total", factory: factory)
        lag = Gauge(label: "attache_queue_lag", factory: factory)
    }
}

/// The fetch loop's view of its messages: shared with their tasks and the shutdown handler.
private final class Progress: Sendable {
    let stopping = Atomic<Bool>(false)
    let finished = Atomic<Int>(0)
}

/// What the worker's health endpoint reads.
public final class WorkerState: Sendable {
    let connection = Mutex<NATSConnection?>(nil)
    /// Whether the worker has said that nats.c parses its messages' headers (once per process).
    let warnedHeaders = Atomic<Bool>(false)
    public init() {}

    /// Consuming, and connected to NATS.
    public var isHealthy: Bool { connection.withLock { $0?.isConnected ?? false } }
}

/// Unix time in nanoseconds.
func wallClockNs() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
}
