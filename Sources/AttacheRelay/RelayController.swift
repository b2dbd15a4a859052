import AttacheHTTPKit
import Attache
import AttacheEnrichment
import AttacheOperations
import AttachePayload
import AttacheSupport
import AttacheTenants
import Foundation
import HTTPTypes
import Logging
import NIOCore
import NIOPosix

/// The two send APIs the relay speaks, and how each says what went wrong.
enum Provider: Sendable {
    case apns, fcm

    /// An error in the provider's own documented shape: APNs `{"reason": "BadPath"}` with the
    /// request's `apns-id` (a new one when it had none), as Apple answers every request — a client
    /// reads it from every answer (aioapns drops the connection without it); Google's
    /// `{"error": {"code", "message", "status"}}`.
    func error(_ status: Int, _ reason: String, request: RelayRequest? = nil, outcome: String? = nil, budget: Duration? = nil) -> RelayAnswer {
        error(status, reason, fields: request?.fields, outcome: outcome, budget: budget)
    }

    /// `error`, given the request's fields (all it reads of the request).
    func error(_ status: Int, _ reason: String, fields requestFields: [HeaderField]?, outcome: String? = nil, budget: Duration? = nil)
        -> RelayAnswer
    {
        let body: JSONValue
        switch self {
        case .apns:
            body = .object(JSONObject(["reason": .string(reason)]))
        case .fcm:
            let code = ["ServiceUnavailable": "UNAVAILABLE", "PayloadTooLarge": "INVALID_ARGUMENT", "BadPath": "NOT_FOUND",
                        "MethodNotAllowed": "INVALID_ARGUMENT"][reason] ?? "INTERNAL"
            body = .object(JSONObject(["error": .object(JSONObject([
                "code": .number(String(status)), "message": .string(reason), "status": .string(code),
            ]))]))
        }
        var fields = [HeaderField(name: "content-type", value: "application/json")]
        if self == .apns {
            let id = requestFields?.first("apns-id").flatMap { $0.isEmpty ? nil : $0 }
            fields.append(HeaderField(name: "apns-id", value: id ?? UUID().uuidString))
        }
        return RelayAnswer(status: status, fields: fields, body: ByteBuffer(bytes: JSONWriter.bytes(body)), outcome: outcome, budget: budget)
    }
}

/// A request as the relay reads it, whichever protocol brought it: whole (a request goes upstream
/// only once the client has sent all of it), names in lower case, pseudo-fields apart.
struct RelayRequest: Sendable {
    var method: String
    /// The path with its query.
    var path: String
    /// Added to with `append`, which notes those the relay reads itself.
    var fields: [HeaderField]
    /// Where the fields the relay reads itself are, noted as `fields` was read.
    private var known = KnownFields()
    var body: ByteBuffer
    /// Its `content-length` over HTTP/2, which its DATA frames must add up to (RFC 9113 § 8.1.1).
    var declaredLength: Int? = nil
    /// When its head was read: the enrichment's deadline counts from here.
    var arrival = ContinuousClock.now
    /// The event loop of its client's connection, when known: it goes upstream on a connection of
    /// the same loop, and the answer comes back without a hop between threads.
    var loop: (any EventLoop)?

    /// A request whose fields are read here (HTTP/1.1's, which Hummingbird has checked).
    init(method: String, path: String, fields: [HeaderField], body: ByteBuffer, loop: (any EventLoop)? = nil) {
        self.method = method
        self.path = path
        self.fields = fields
        self.body = body
        self.loop = loop
        for (index, field) in fields.enumerated() { known.note(field.name, at: index) }
    }

    /// Adds a field read from the request, noting it if it is one the relay reads.
    mutating func append(_ field: HeaderField) {
        known.note(field.name, at: fields.count)
        fields.append(field)
    }

    /// `apns-topic`: whose app the notification is for.
    var topic: String? { known.topic.map { fields[$0].value } }
    /// `Attache-Deadline-Ms`.
    var deadline: String? { known.deadline.map { fields[$0].value } }
    /// `traceparent` or `tracestate`, as `PayloadTrace` asks for them; nil for any other name.
    func traceField(_ name: String) -> String? {
        (name == "traceparent" ? known.traceparent : name == "tracestate" ? known.tracestate : nil).map { fields[$0].value }
    }

    /// Whether a `via` field names `hop`: the request has been through this relay before.
    func hasVisited(_ hop: String) -> Bool {
        known.via && fields.contains { $0.name == "via" && $0.value.contains(hop) }
    }
}

/// Where the first of each field the relay reads itself is in a request's fields, noted in the
/// pass that reads them: looking each one up afterwards compared every field's name again, a few
/// times a request. Dispatched on the name's length: most fields are compared with none.
private struct KnownFields: Sendable {
    var topic: Int?
    var deadline: Int?
    var traceparent: Int?
    var tracestate: Int?
    /// Whether any `via` field came (only then is a loop looked for).
    var via = false

    mutating func note(_ name: String, at index: Int) {
        switch name.utf8.count {
        case 3: if name == "via" { via = true }
        case 10:
            if name == "apns-topic" { topic = topic ?? index } else if name == "tracestate" { tracestate = tracestate ?? index }
        case 11: if name == "traceparent" { traceparent = traceparent ?? index }
        case 19: if name == RelayAnswer.deadline { deadline = deadline ?? index }
        default: break
        }
    }
}

/// What the relay answers: the upstream's answer passed back, or its own.
struct RelayAnswer: Sendable {
    var status: Int
    /// The upstream's fields passed back, or the relay's own; lower-case names.
    var fields: [HeaderField]
    /// Empty: no body (Apple's 200 is a HEADERS frame alone, and a client such as aioapns parses
    /// any DATA frame it gets as JSON).
    var body: ByteBuffer
    /// Attache's own fields, written after `fields` (`Attache-Outcome`, and the budget applied
    /// as `Attache-Deadline-Ms`). Apart from them: the upstream's fields reach here shared with
    /// the exchange that read them, and appending to them copied the array per request.
    var outcome: String? = nil
    var budget: Duration? = nil

    func adding(_ field: HeaderField) -> RelayAnswer {
        var answer = self
        answer.fields.append(field)
        return answer
    }

    /// How many fields `forEachField` gives.
    var fieldCount: Int { fields.count + (outcome == nil ? 0 : 1) + (budget == nil ? 0 : 1) }

    /// Each field of the answer, by name and value, in order: `fields`, then Attache's own.
    func forEachField(_ body: (String, String) -> Void) {
        for field in fields { body(field.name, field.value) }
        if let outcome { body(Self.outcome, outcome) }
        if let budget { body(Self.deadline, String(Int(budget.milliseconds))) }
    }

    static let outcome = HTTPField.Name.attacheOutcome.canonicalName
    static let deadline = HTTPField.Name.attacheDeadline.canonicalName
}

/// Which send API a request is for, read from its method and path alone.
enum RelayRoute: Sendable {
    /// `app`: the APNs topic or the FCM project, which names the tenant when there are tenants.
    case send(Provider, app: String?)
    /// A path of a send API with another method than POST.
    case methodNotAllowed(Provider)
    /// Neither send API.
    case badPath

    /// `POST /3/device/{token}` and `POST /v1/projects/{project}/messages:send`, a segment each
    /// (the query aside). Read as the path's bytes in memory: every request is routed, and
    /// splitting the path into `Character`s cost more than the rest of forwarding a passthrough's
    /// headers (and walking its `UTF8View` by index, about 1,400 instructions a request).
    init(method: String, path: String, topic: @autoclosure () -> String?) {
        let matched = path.utf8.withContiguousStorageIfAvailable(Self.match) ?? Array(path.utf8).withUnsafeBufferPointer(Self.match)
        guard let (provider, project) = matched else {
            self = .badPath
            return
        }
        guard method == "POST" else {
            self = .methodNotAllowed(provider)
            return
        }
        self = .send(provider, app: provider == .apns ? topic() : project)
    }

    private static let apnsPrefix = Array("/3/device/".utf8)
    private static let fcmPrefix = Array("/v1/projects/".utf8)
    private static let fcmSuffix = Array("/messages:send".utf8)

    /// The send API a path is for, and with FCM its project; nil: neither.
    private static func match(_ path: UnsafeBufferPointer<UInt8>) -> (Provider, project: String?)? {
        let bytes = UnsafeBufferPointer(rebasing: path[..<(path.firstIndex(of: UInt8(ascii: "?")) ?? path.endIndex)])
        if segment(of: bytes, after: apnsPrefix, before: []) != nil { return (.apns, nil) }
        guard let project = segment(of: bytes, after: fcmPrefix, before: fcmSuffix) else { return nil }
        return (.fcm, String(decoding: UnsafeBufferPointer(rebasing: bytes[project]), as: UTF8.self))
    }

    /// Where what lies between `prefix` and `suffix` is: one segment, not empty; nil when `path`
    /// is not so.
    private static func segment(of path: UnsafeBufferPointer<UInt8>, after prefix: [UInt8], before suffix: [UInt8]) -> Range<Int>? {
        let (start, end) = (prefix.count, path.count - suffix.count)
        guard end > start, path.starts(with: prefix), path[end...].elementsEqual(suffix),
              !path[start..<end].contains(UInt8(ascii: "/")) else { return nil }
        return start..<end
    }

    /// The answer to a request that is not sent: nil for one that is.
    func refusal(_ request: RelayRequest) -> RelayAnswer? {
        switch self {
        case .send: nil
        case .methodNotAllowed(let provider):
            // RFC 9110 §15.5.6: a 405 names the methods the path has.
            provider.error(405, "MethodNotAllowed", request: request).adding(HeaderField(name: "allow", value: "POST"))
        case .badPath: Provider.apns.error(404, "BadPath", request: request)
        }
    }
}

/// `POST /3/device/{token}` (APNs) and `POST /v1/projects/{project}/messages:send` (FCM v1): each
/// request's body is enriched by the pipeline every front door shares when it carries
/// `mutable-content`, or (FCM, unless Android copies are off) an `image` whose Android copy is made
/// whatever the APNs part says; the rest is forwarded byte for byte, read no further than that
/// gate. Then it is forwarded; the client gets exactly what the upstream answered — status, `apns-id`,
/// `apns-unique-id`, body — plus `Attache-Outcome`, which never reaches Apple or Google. A client
/// is told "sent" only when the upstream said so: an upstream that cannot be reached is a 503
/// `ServiceUnavailable` in the provider's shape, so the client's own retry logic works.
struct RelayController: Sendable {
    let configuration: RelayConfiguration
    let enrichment: Enrichment
    let forwarder: Forwarder
    /// With a tenants file: a request is the tenant's whose `apps` name its APNs topic
    /// (`apns-topic`) or its FCM project (the path's).
    let tenants: Tenants?
    let credentials: ProviderCredentials
    let metrics: EnrichmentMetrics
    let logger: Logger
    /// This relay's name in the `via` field of every request it forwards (RFC 9110's, as proxies
    /// add it). A request that arrives carrying it has gone round a loop — an upstream that leads
    /// back here through DNS, a load balancer or another relay — and is answered 508 at once
    /// instead of going round again until the upstream timeout.
    let hop = "attache-" + String(UInt64.random(in: .min ... .max), radix: 16)

    var gate: AdmissionGate {
        AdmissionGate(tenants: tenants, policy: enrichment.deadlinePolicy, metrics: metrics, door: "relay")
    }

    /// How a whole request the route sends is answered: at once, from the event loop it arrived
    /// on, or by a task (`relayInTask`).
    enum Start: Sendable {
        case answered(EventLoopFuture<RelayAnswer>)
        case task(Pending)
    }

    /// What `start` found of a request it leaves to a task, so that nothing is read or counted
    /// twice: whether the body passed the gate, and its tenant's admission when it was asked.
    struct Pending: Sendable {
        var gated: Bool
        var decision: AdmissionGate.Decision?
        /// The payload's extension, started on the event loop and waiting for its media.
        var waiting: ExtensionRuntime.Waiting?
    }

    /// The answer to a whole request the route sends: enriched (or not), forwarded, and the
    /// upstream's answer passed back.
    func relay(_ request: RelayRequest, provider: Provider, app: String?) async -> RelayAnswer {
        switch start(request, provider: provider, app: app, on: MultiThreadedEventLoopGroup.singleton.any()) {
        case .answered(let answer): await Self.settled(answer, provider: provider, request: request)
        case .task(let pending): await Self.settled(await relayInTask(request, provider: provider, app: app, pending), provider: provider,
                                                    request: request)
        }
    }

    /// The task's part of `relay`, for a request `start` did not answer: the payload enriched
    /// (or not) and sent; the upstream's answer comes on the client's event loop, where it is
    /// written back with no hop through the task again. With traces on, the payload's span goes
    /// under the client's `traceparent` (which is forwarded upstream as it came, like every other
    /// header).
    func relayInTask(_ request: RelayRequest, provider: Provider, app: String?, _ pending: Pending) async -> EventLoopFuture<RelayAnswer> {
        await PayloadTrace.within(contextFrom: request.traceField) {
            await enrichAndForward(request, provider: provider, app: app, pending)
        }
    }

    private func enrichAndForward(_ request: RelayRequest, provider: Provider, app: String?, _ pending: Pending) async -> EventLoopFuture<RelayAnswer> {
        let gated = pending.gated
        let tenant = app.flatMap { tenants?.tenant(app: $0) }
        var admission: Admission?, passReason: Reason?
        if gated {
            switch pending.decision ?? gate.admit(tenant) {
            case .admitted(let admitted): admission = admitted
            case .refused: passReason = .tenantLimited
            case .unknownTenant: passReason = .unknownTenant
            }
        }
        let budget = (admission?.policy ?? gate.policy(for: tenant)).budget(header: request.deadline)
        // The tenant's slot is held while its payload is enriched (which cannot throw), not while
        // the upstream answers.
        let (body, outcome) = gated
            ? await enriched(request.body, deadline: request.arrival + budget, admission: admission, passReason: passReason,
                             waiting: pending.waiting)
            : passedThrough(request.body)
        admission?.leave()
        let authorization: String?
        do {
            authorization = try await credential(for: provider)
        } catch {
            let loop = request.loop ?? MultiThreadedEventLoopGroup.singleton.any()
            return loop.makeSucceededFuture(noCredential(error, provider: provider, request: request, outcome: outcome, budget: budget))
        }
        return forward(request, provider: provider, body: body, authorization: authorization, outcome: outcome, budget: budget)
    }

    /// A request that needs neither enrichment nor a credential still to be bought — a
    /// passthrough, the bulk of a sender's traffic — is forwarded from the event loop it arrived
    /// on, with no task and no hop through the concurrency pool; any other goes to a task.
    func start(_ request: RelayRequest, provider: Provider, app: String?, on loop: any EventLoop) -> Start {
        if request.hasVisited(hop) {
            logger.warning("a request came back to the relay that forwarded it: the upstream leads here")
            return .answered(loop.makeSucceededFuture(provider.error(508, "LoopDetected", request: request)))
        }
        let gated = isGated(request.body, provider: provider)
        if gated && provider == .apns {
            return PayloadTrace.within(contextFrom: request.traceField) { startEnriching(request, app: app, on: loop) }
        }
        guard !gated, provider == .apns || credentials.fcm == nil else { return .task(Pending(gated: gated)) }
        let budget = gate.policy(for: app.flatMap { tenants?.tenant(app: $0) }).budget(header: request.deadline)
        let (body, outcome) = passedThrough(request.body)
        return .answered(forwardAtOnce(request, provider: provider, body: body, outcome: outcome, budget: budget, on: loop))
    }

    /// `forward` from the event loop, for an upstream whose credential needs no waiting (APNs's
    /// own token, or the client's): the relay's, when it holds one, cannot fail to be made
    /// except by a bad key, answered 503 here.
    private func forwardAtOnce(_ request: RelayRequest, provider: Provider, body: ByteBuffer, outcome: String, budget: Duration,
                               on loop: any EventLoop) -> EventLoopFuture<RelayAnswer> {
        let authorization: String?
        do {
            authorization = provider == .apns ? try credentials.apns?.authorization() : nil
        } catch {
            return loop.makeSucceededFuture(noCredential(error, provider: provider, request: request, outcome: outcome, budget: budget))
        }
        return forward(request, provider: provider, body: body, authorization: authorization, outcome: outcome, budget: budget)
    }

    /// An APNs request to enrich, admitted here: answered from the event loop when its payload
    /// needs no waiting (its media cached), else left to a task with its admission and its
    /// extension, which has read the payload and looked for its media in the cache. A tenant past
    /// its limits, or a request of no tenant, is still sent, by the task: unenriched, with the
    /// reason in Attache-Outcome (a relay that held notifications back would lose them). Only a
    /// request to enrich enters its tenant's limits: they bound media work, which a passthrough
    /// has none of.
    private func startEnriching(_ request: RelayRequest, app: String?, on loop: any EventLoop) -> Start {
        let decision = gate.admit(app.flatMap { tenants?.tenant(app: $0) })
        guard case .admitted(let admission) = decision else { return .task(Pending(gated: true, decision: decision)) }
        let budget = admission.policy.budget(header: request.deadline)
        let remaining = ContinuousClock.now.duration(to: request.arrival + budget)
        let started: ExtensionRuntime.Start?
        do {
            started = remaining > .zero ? try enrichment.start(Array(buffer: request.body), identifier: "relay", budget: remaining,
                                                               logger: logger, scope: admission.scope) : nil
        } catch {
            started = nil  // not a payload: the task answers it as it answers any
        }
        let emission: Emission
        switch started {
        case .done(let done): emission = done
        case .waiting(let waiting): return .task(Pending(gated: true, decision: decision, waiting: waiting))
        case nil: return .task(Pending(gated: true, decision: decision))
        }
        gate.finish(emission, admission: admission)
        return .answered(forwardAtOnce(request, provider: .apns, body: ByteBuffer(bytes: emission.bytes), outcome: emission.outcomeHeader,
                                       budget: budget, on: loop))
    }

    /// Sends `body` upstream with the client's fields (its authorization replaced by the relay's
    /// own, when it holds one), and makes the upstream's answer, or its absence, the client's.
    /// The future never fails: an upstream not reached is a 503 in the provider's shape.
    private func forward(_ request: RelayRequest, provider: Provider, body: ByteBuffer, authorization: String?, outcome: String,
                         budget: Duration) -> EventLoopFuture<RelayAnswer> {
        let (metrics, logger) = (metrics, logger)
        // What the answer to a request not sent reads of it: the closure holds its fields, not
        // a copy of the whole request.
        let fields = request.fields
        // The one future of a forwarded request: the layers below hand the answer back by a call.
        let relayed = (request.loop ?? MultiThreadedEventLoopGroup.currentEventLoop ?? MultiThreadedEventLoopGroup.singleton.any())
            .makePromise(of: RelayAnswer.self)
        forwarder.forward(provider, path: request.path, fields: fields, authorization: authorization, via: "2 " + hop, body: body,
                          timeout: configuration.upstreamTimeout, on: relayed.futureResult.eventLoop) { result in
            switch result {
            case .success(let answer):
                metrics.relayed(status: answer.status)
                relayed.succeed(RelayAnswer(status: answer.status, fields: answer.headers, body: answer.body,
                                            outcome: answer.status == 200 ? outcome : Self.undelivered(outcome), budget: budget))
            case .failure(let error):
                logger.warning("upstream not reached", metadata: ["attache.error": "\(error)"])
                metrics.relayed(status: 503)
                relayed.succeed(provider.error(503, "ServiceUnavailable", fields: fields, outcome: Self.undelivered(outcome), budget: budget))
            }
        }
        return relayed.futureResult
    }

    /// A future of `forward`'s, awaited (it does not fail).
    private static func settled(_ answer: EventLoopFuture<RelayAnswer>, provider: Provider, request: RelayRequest) async -> RelayAnswer {
        (try? await answer.get()) ?? provider.error(503, "ServiceUnavailable", request: request)
    }

    /// The relay holds a credential for the upstream and cannot use it now: nothing is sent.
    private func noCredential(_ error: any Error, provider: Provider, request: RelayRequest, outcome: String, budget: Duration) -> RelayAnswer {
        // The error names what failed (a refused service account, an unreachable token
        // endpoint), never a key or a token.
        logger.error("no credential for the upstream", metadata: ["attache.error": "\(error)"])
        metrics.relayed(status: 503)
        return provider.error(503, "ServiceUnavailable", request: request, outcome: Self.undelivered(outcome), budget: budget)
    }

    /// The relay's own credential for `provider`, when it holds one; nil: the client's goes through.
    func credential(for provider: Provider) async throws -> String? {
        switch provider {
        case .apns: try credentials.apns?.authorization()
        case .fcm: try await credentials.fcm?.authorization()
        }
    }

    /// Whether the body is parsed at all: it names `mutable-content`, or (to FCM, unless Android
    /// copies are off) an `image`, whose Android copy is made whatever the APNs part says.
    func isGated(_ body: ByteBuffer, provider: Provider) -> Bool {
        let androidImage = provider == .fcm && enrichment.services.configuration.androidCopies
        return body.withUnsafeReadableBytes { Self.find(Self.gate, in: $0) || androidImage && Self.find(Self.image, in: $0) }
    }

    /// A body the gate let by, counted and sent as it came.
    private func passedThrough(_ body: ByteBuffer) -> (body: ByteBuffer, outcome: String) {
        metrics.request(outcome: .passthrough, reason: .notMutable)
        return (body, Self.notMutable)
    }

    /// The body to forward and the outcome to tell the client, for a body the gate let in;
    /// anything the pipeline cannot enrich goes as it came. `passReason`: not enriched (no
    /// tenant, or one past its limits): the body goes as it came.
    /// `waiting`: the payload's extension, started on the event loop, whose result is taken in
    /// place of enriching the payload again.
    func enriched(_ received: ByteBuffer, deadline: ContinuousClock.Instant, admission: Admission? = nil, passReason: Reason? = nil,
                  waiting: ExtensionRuntime.Waiting? = nil) async -> (body: ByteBuffer, outcome: String) {
        // What is left of the budget once the request got here; none left, it goes as it came.
        let budget = ContinuousClock.now.duration(to: deadline)
        if let passReason = passReason ?? (budget > .zero ? nil : .timeout) {
            metrics.request(outcome: .fallback, reason: passReason)
            return (received, Emission.outcomeHeader(.fallback, passReason))
        }
        do {
            let emission = if let waiting { await waiting.emission() } else {
                try await enrichment.enrich(Array(buffer: received), identifier: "relay", budget: budget, logger: logger,
                                            scope: admission?.scope ?? .unscoped)
            }
            gate.finish(emission, admission: admission)
            return (ByteBuffer(bytes: emission.bytes), emission.outcomeHeader)
        } catch {
            // Not a JSON object: Apple or Google says what is wrong with it, as they would.
            metrics.request(outcome: .fallback, reason: .invalidPayload)
            return (received, Emission.outcomeHeader(.fallback, .invalidPayload))
        }
    }

    static let notMutable = Emission.outcomeHeader(.passthrough, .notMutable)

    /// The outcome told with an answer that is not the upstream's 200: the payload may have been
    /// enriched, but nothing reached a device (an upstream refusal, or no upstream at all).
    /// `attache_relay_upstream_total{status}` counts these by status.
    static func undelivered(_ outcome: String) -> String { outcome + "; delivered=false" }

    /// What a body must contain to be parsed at all.
    static let gate = Array("mutable-content".utf8)

    /// Whether `needle` occurs in `bytes`, by memchr and memcmp. The standard library's
    /// `contains(_:)` of one collection in another goes through _StringProcessing's generic
    /// search: about 130,000 instructions for a 39-byte body, 15 % of all the relay spent on a
    /// passthrough request (valgrind's callgrind over 4,000 of them).
    static func find(_ needle: [UInt8], in bytes: UnsafeRawBufferPointer) -> Bool {
        guard let first = needle.first else { return true }
        guard let base = bytes.baseAddress, bytes.count >= needle.count else { return false }
        let end = base + (bytes.count - needle.count + 1)  // the last place a match can start, plus one
        var at = base
        return needle.withUnsafeBytes { wanted in
            while at < end, let hit = memchr(at, Int32(first), end - at) {
                if memcmp(hit, wanted.baseAddress!, needle.count) == 0 { return true }
                at = UnsafeRawPointer(hit) + 1
            }
            return false
        }
    }
    /// What else an FCM body may contain to be parsed: its Android image is copied ungated.
    static let image = Array(#""image""#.utf8)
}
