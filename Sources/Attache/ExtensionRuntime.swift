import AttachePayload
import Logging
import Synchronization

extension ExtensionRuntime {
    public struct Configuration: Sendable {
        /// The deadline rule: each payload's budget from when it is handed over (its deadline is
        /// then plus the budget), the most a front door's deadline header may ask, and what is
        /// emitted when the deadline passes first.
        public var deadlinePolicy: DeadlinePolicy
        /// The key the attachments array goes under.
        public var attachmentsKey: String
        public var maxPayloadBytes: Int
        public var parser: JSONParser
        /// How long before the deadline the runtime stops waiting, so that cancelling, calling
        /// `serviceExtensionTimeWillExpire` and writing the answer are done by the deadline rather
        /// than after it, even with hundreds of payloads expiring at once.
        public var windDown: Duration

        public init(
            deadlinePolicy: DeadlinePolicy = DeadlinePolicy(),
            attachmentsKey: String = AttachmentEntry.defaultKey,
            maxPayloadBytes: Int = PayloadBudget.apns,
            parser: JSONParser = JSONParser(),
            windDown: Duration = .milliseconds(10)
        ) {
            self.deadlinePolicy = deadlinePolicy
            self.attachmentsKey = attachmentsKey
            self.maxPayloadBytes = maxPayloadBytes
            self.parser = parser
            self.windDown = windDown
        }
    }
}

/// One payload's answer: the bytes to send, and the report.
public struct Emission: Sendable {
    public var bytes: [UInt8]
    public var report: EnrichReport

    public init(bytes: [UInt8], report: EnrichReport) {
        self.bytes = bytes
        self.report = report
    }
    public var outcome: Outcome { report.outcome }
    public var reason: Reason? { report.reason }

    /// The field every front door answers with (HTTP, a relayed response, a NATS message's
    /// headers): the outcome and its reason.
    public static let outcomeHeaderName = "Attache-Outcome"

    /// `outcome; reason=…`: that field's value.
    public var outcomeHeader: String { Self.outcomeHeader(outcome, reason) }

    public static func outcomeHeader(_ outcome: Outcome, _ reason: Reason?) -> String {
        outcome.rawValue + (reason.map { "; reason=\($0)" } ?? "")
    }
}

/// Runs an extension on one payload under one deadline, like iOS runs an NSE: whatever the
/// extension does, exactly one payload comes out — the new content when it finished in time and
/// fits the APNs budget, else the original bytes (or the best attempt, when so configured).
public struct ExtensionRuntime: Sendable {
    public var configuration: ExtensionRuntime.Configuration

    public init(configuration: ExtensionRuntime.Configuration = ExtensionRuntime.Configuration()) {
        self.configuration = configuration
    }

    /// Throws only for input that is not a payload (not a JSON object, too deep, too large).
    public func process(
        _ bytes: [UInt8],
        identifier: String = "payload",
        logger: Logger = ExtensionRuntime.silent,
        makeExtension: @Sendable () -> any AsyncNotificationServiceExtension
    ) async throws(PayloadError) -> Emission {
        switch try start(bytes, identifier: identifier, logger: logger, makeExtension: makeExtension) {
        case .done(let emission): return emission
        case .waiting(let waiting): return await waiting.emission()
        }
    }

    /// `process` as far as it goes without waiting: the payload read, and answered when the
    /// runtime answers it itself (not mutable, ambiguous) or its extension has its result at once
    /// (`resultAtOnce`); else the extension, handed the payload, to be waited for from a task. A
    /// front door on an event loop answers the first from the loop, with no task made for them,
    /// and gives the second to a task, which does not read the payload again.
    public func start(
        _ bytes: [UInt8],
        identifier: String = "payload",
        logger: Logger = ExtensionRuntime.silent,
        makeExtension: () -> any AsyncNotificationServiceExtension
    ) throws(PayloadError) -> Start {
        switch try handOver(bytes, identifier: identifier, logger: logger) {
        case .answered(let emission): return .done(emission)
        case .handed(let handed):
            let ext = makeExtension()
            if let atOnce = ext.resultAtOnce(handed.request) { return .done(finish(atOnce, handed)) }
            return .waiting(Waiting(runtime: self, ext: ext, handed: handed))
        }
    }

    /// What `start` came to.
    public enum Start: Sendable {
        /// The answer, made without waiting.
        case done(Emission)
        /// An extension to wait for.
        case waiting(Waiting)
    }

    /// A payload's extension, handed its request by `start`, whose result is to be waited for.
    /// Its deadline counts from when it was handed over.
    public struct Waiting: Sendable {
        fileprivate let runtime: ExtensionRuntime
        fileprivate let ext: any AsyncNotificationServiceExtension
        fileprivate let handed: Handed

        /// The payload that goes out: what `process` would have answered.
        public func emission() async -> Emission {
            runtime.finish(await ExtensionRuntime.race(ext, handed.request, deadline: handed.request.deadline), handed)
        }
    }

    /// A payload read and found to be one an extension is run on, with its request.
    fileprivate struct Handed: Sendable {
        let payload: Payload
        let request: NotificationRequest
        let start: ContinuousClock.Instant
    }

    private enum HandOver {
        case answered(Emission)
        case handed(Handed)
    }

    /// The payload read, answered here when no extension is run on it.
    private func handOver(_ bytes: [UInt8], identifier: String, logger: Logger) throws(PayloadError) -> HandOver {
        let start = ContinuousClock.now
        // Stop waiting a little early (at most half the budget) so the answer is out by the deadline.
        let budget = configuration.deadlinePolicy.default
        let deadline = start + max(budget / 2, budget - configuration.windDown)
        let payload = try Payload(bytes: bytes, parser: configuration.parser)

        if payload.repeatedAPNsKey(attachmentsKey: configuration.attachmentsKey) != nil {
            return .answered(emit(payload.original, .fallback, .ambiguousPayload, [], start: start))
        }
        guard payload.wantsServiceExtension else {
            return .answered(emit(payload.original, .passthrough, .notMutable, [], start: start))
        }
        let request = NotificationRequest(identifier: identifier, payload: payload, deadline: deadline, receivedAt: start,
                                          attachmentsKey: configuration.attachmentsKey, logger: logger)
        return .handed(Handed(payload: payload, request: request, start: start))
    }

    /// The payload that goes out for the extension's result.
    fileprivate func finish(_ result: ExtensionResult, _ handed: Handed) -> Emission {
        let (payload, start) = (handed.payload, handed.start)
        if result.reason == .timeout || result.attachments.contains(where: { $0.reason == .timeout }) {
            // The deadline fired (here, or in a transfer that hit it a moment earlier): the best
            // attempt goes out only when asked for and usable.
            let pending = result.attachments.map { a -> AttachmentReport in
                var a = a
                if a.outcome == .pending { a.outcome = .failed; a.reason = .timeout }
                return a
            }
            let attached = pending.contains { $0.outcome == .attached }
            if configuration.deadlinePolicy.onTimeout == .bestAttempt, attached, let encoded = encode(result.content, original: payload) {
                return emit(encoded, .partial, .timeout, pending, start: start)
            }
            return emit(payload.original, .fallback, .timeout, pending, start: start)
        }
        if result.outcome == .fallback || result.outcome == .passthrough {
            return emit(payload.original, result.outcome, result.reason, result.attachments, start: start)
        }
        if !result.content.attachments.isEmpty && payload.root.contains(configuration.attachmentsKey) {
            return emit(payload.original, .fallback, .keyConflict, result.attachments, start: start)
        }
        guard let encoded = encode(result.content, original: payload) else {
            return emit(payload.original, .fallback, .payloadTooLarge, result.attachments, start: start)
        }
        return emit(encoded, result.outcome, result.reason, result.attachments, start: start)
    }

    /// Where the extension's own task runs (nil: the global concurrent executor, as any task's).
    /// Set by a front door whose payloads should not change threads on their way through: the
    /// relay runs a payload's enrichment on the event loop its request came in on and its answer
    /// goes out from, so that a cached payload costs no thread hop (blocking and media work go to
    /// the pools they always go to).
    @TaskLocal public static var workExecutor: (any TaskExecutor)?

    /// The extension's result, or at the deadline (or when the caller's task is cancelled) its
    /// best attempt, taken before it is cancelled, while it can still answer; it is then waited
    /// for anyway, and its final reports say where each unfinished attachment had got to (what a
    /// timeline draws). The extension runs in a task of its own, which the deadline cancels; the
    /// deadline is an entry of the process's one `DeadlineTimer`, not a sleeping task.
    fileprivate static func race(_ ext: any AsyncNotificationServiceExtension, _ request: NotificationRequest,
                             deadline: ContinuousClock.Instant) async -> ExtensionResult {
        enum Race { case running, answered, expired(best: ExtensionResult?) }
        let race = Mutex(Race.running)
        let work = Task(executorPreference: workExecutor) { await ext.didReceive(request) }
        let expire: @Sendable () -> Void = {
            // Under the lock, so that an answer arriving meanwhile finds the best attempt taken.
            let expired = race.withLock { race -> Bool in
                guard case .running = race else { return false }
                race = .expired(best: ext.serviceExtensionTimeWillExpire())
                return true
            }
            if expired { work.cancel() }
        }
        let timer = DeadlineTimer.shared.schedule(at: deadline, expire)
        let final = await withTaskCancellationHandler { await work.value } onCancel: { expire() }
        DeadlineTimer.shared.cancel(timer)
        let ended = race.withLock { race -> Race in
            if case .running = race { race = .answered }
            return race
        }
        guard case .expired(let best) = ended else { return final }
        return ExtensionResult(content: best?.content ?? request.content, outcome: .fallback, reason: .timeout,
                               attachments: merge(snapshot: best?.attachments, final: final.attachments))
    }

    /// Reports after the wind-down, except that what was not attached at the deadline stays a
    /// timeout even if it finished while the extension was being cancelled.
    static func merge(snapshot: [AttachmentReport]?, final: [AttachmentReport]) -> [AttachmentReport] {
        final.enumerated().map { i, report in
            var report = report
            let attachedInTime = snapshot.map { i < $0.count && $0[i].outcome == .attached } ?? false
            if !attachedInTime && report.outcome != .failed {
                report.outcome = .failed
                report.reason = .timeout
            }
            return report
        }
    }

    /// A logger that drops everything: the default for callers that pass none.
    public static let silent = Logger(label: "attache", factory: { _ in SwiftLogNoOpLogHandler() })

    /// Validates the payload and answers with its original bytes and `reason`, without running
    /// an extension (a service over its in-flight limit does this).
    public func passOn(_ bytes: [UInt8], reason: Reason) throws(PayloadError) -> Emission {
        let start = ContinuousClock.now
        let payload = try Payload(bytes: bytes, parser: configuration.parser)
        return emit(payload.original, payload.wantsServiceExtension ? .fallback : .passthrough,
                    payload.wantsServiceExtension ? reason : .notMutable, [], start: start)
    }

    /// The content as bytes within the APNs budget, trimming optional attachment fields first.
    private func encode(_ content: NotificationContent, original: Payload) -> [UInt8]? {
        if content.attachments.isEmpty {
            if content.userInfo == original.root { return original.original }
            let bytes = JSONWriter.bytes(.object(content.userInfo))
            return bytes.count <= configuration.maxPayloadBytes ? bytes : nil
        }
        return PayloadBudget.fit(content.userInfo, entries: content.attachments, key: configuration.attachmentsKey,
                                 maxBytes: configuration.maxPayloadBytes)
    }

    private func emit(_ bytes: [UInt8], _ outcome: Outcome, _ reason: Reason?, _ attachments: [AttachmentReport],
                      start: ContinuousClock.Instant) -> Emission {
        Emission(bytes: bytes, report: EnrichReport(
            outcome: outcome, reason: reason, elapsedMs: Self.milliseconds(start.duration(to: .now)),
            deadlineMs: Self.milliseconds(configuration.deadlinePolicy.default), payloadBytes: bytes.count, attachments: attachments
        ))
    }

    /// In milliseconds, fractions kept (AttacheSupport's `Duration.milliseconds`, which the
    /// runtime does without: it depends on the payload model and logging alone).
    private static func milliseconds(_ d: Duration) -> Double {
        Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15
    }
}
