import AttacheHTTPKit
import Attache
import AttacheEnrichment
import AttacheOperations
import AttachePayload
import AttacheSupport
import AttacheTenants
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// `POST /v1/enrich`: the payload in, the payload to send out — always 200 for a JSON object,
/// 400 only for a body that is not one, 413 for a body over the limit.
struct EnrichController: Sendable {
    let configuration: ServerConfiguration
    let enrichment: Enrichment
    /// The tenants file in force; nil: one implicit tenant.
    let tenants: Tenants?
    let metrics: EnrichmentMetrics
    let connections: Connections
    let inFlight = InFlight()

    func register(on router: some RouterMethods<AttacheRequestContext>) {
        router.post("/v1/enrich") { request, context in try await enrich(request, context: context) }
    }

    func enrich(_ request: Request, context: AttacheRequestContext) async throws -> Response {
        // The deadline counts from the request's arrival (docs/service.md), read by the connection's
        // guard: under load a request waits for the application before this runs.
        let watch = connections.watch(for: context.channel)
        let arrival = watch?.arrival ?? .now
        let id = request.headers[.requestID].flatMap { $0.isEmpty || $0.count > 128 ? nil : $0 } ?? Self.newRequestID()
        var logger = context.logger
        logger[metadataKey: "attache.request.id"] = .string(id)
        // A tenant's rate, concurrency and daily quota are taken before anything is read (with a
        // tenants file, TenantAuth has found the tenant: no request reaches here without one).
        let admission: Admission
        switch AdmissionGate(tenants: tenants, policy: enrichment.deadlinePolicy, metrics: metrics, door: "service").admit(context.tenant) {
        case .admitted(let admitted): admission = admitted
        case .refused(_, let refusal):
            return ErrorResponse.response(.tooManyRequests, refusal.message,
                                          headers: [.requestID: id, .retryAfter: String(refusal.retryAfter)])
        case .unknownTenant:
            return Self.error(.unauthorized, "no tenant", id: id)
        }
        defer { admission.leave() }
        let (scope, policy, tenant) = (admission.scope, admission.policy, admission.tenant)
        if let tenant { logger[metadataKey: "attache.tenant"] = .string(tenant.name) }

        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: configuration.maxBodyBytes)
        } catch is NIOTooManyBytesError {
            return Self.error(.contentTooLarge, "payload over \(configuration.maxBodyBytes) bytes", id: id)
        }
        let bytes = Array(buffer: body)
        let deadline = policy.budget(header: request.headers[.attacheDeadline])

        let emission: Emission
        do {
            emission = try await answer(bytes, id: id, deadline: arrival + deadline, scope: scope, watch: watch, logger: logger)
        } catch {
            logger.info("request refused: not a payload", metadata: ["attache.error": "\(error.code)"])
            return Self.error(.badRequest, error.message, id: id)
        }
        admission.finish(emission)
        if let cache = enrichment.services.cache { metrics.warmed(cache.statistics.warmed) }
        logger.debug("payload answered", metadata: [
            "attache.outcome": "\(emission.outcome.rawValue)", "attache.reason": "\(emission.reason?.description ?? "none")",
        ])

        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        headers[.requestID] = id
        headers[.attacheOutcome] = emission.outcomeHeader
        headers[.attacheDeadline] = String(Int(deadline.milliseconds))
        headers[.serverTiming] = Self.serverTiming(emission.report)
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: emission.bytes)))
    }

    /// Enriches within the in-flight limit; past it, the original at once with `overloaded`. A
    /// client that goes away stops its enrichment (and frees its slots); work it shares with other
    /// requests goes on for them (the cache's single-flight hands it over).
    private func answer(_ bytes: [UInt8], id: String, deadline: ContinuousClock.Instant, scope: EnrichmentScope, watch: ConnectionWatch?,
                        logger: Logger) async throws(PayloadError) -> Emission {
        guard let current = inFlight.enter(limit: configuration.maxInFlight) else {
            return try enrichment.passOn(bytes, reason: .overloaded)
        }
        metrics.inFlight(current)
        defer { metrics.inFlight(inFlight.leave()) }
        let enrichment = self.enrichment
        let work: @Sendable () async -> Result<Emission, PayloadError> = {
            // What is left of the budget; none left, the original at once.
            let budget = ContinuousClock.now.duration(to: deadline)
            do throws(PayloadError) {
                guard budget > .zero else { return .success(try enrichment.passOn(bytes, reason: .timeout)) }
                return .success(try await enrichment.enrich(bytes, identifier: id, budget: budget, logger: logger, scope: scope))
            } catch { return .failure(error) }
        }
        guard let watch else { return try await work().get() }
        guard let result = await watch.run(work) else {
            // Nobody is left to read the answer; the original stands in for it.
            return try enrichment.passOn(bytes, reason: .clientGone)
        }
        return try result.get()
    }

    /// `fetch;dur=…, render;dur=…, total;dur=…`: the slowest attachment's time per stage.
    /// Each to a tenth of a millisecond, written as bytes straight into the string (`12.3`,
    /// `0.0`): `Double`'s description, interpolation and an array per stage cost 4 % of a cached
    /// enrichment's instructions.
    static func serverTiming(_ report: EnrichReport) -> String {
        var fetch = 0.0, inspect = 0.0, render = 0.0, store = 0.0
        for attachment in report.attachments {
            let t = attachment.timings
            fetch = max(fetch, t.firstByte + t.download)
            inspect = max(inspect, t.inspect)
            render = max(render, t.render)
            store = max(store, t.store)
        }
        let stages: [(StaticString, Double)] = [("fetch", fetch), ("inspect", inspect), ("render", render), ("store", store),
                                                ("total", report.elapsedMs)]
        // Each stage at most 7 + 5 + 13 + 2 bytes and its separator: ms are capped at 10^12.
        return String(unsafeUninitializedCapacity: 160) { out in
            var at = 0
            func put(_ byte: UInt8) {
                out[at] = byte
                at += 1
            }
            for (i, (name, ms)) in stages.enumerated() {
                if i > 0 { put(UInt8(ascii: ",")); put(UInt8(ascii: " ")) }
                for byte in UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount) { put(byte) }
                for byte in ";dur=".utf8 { put(byte) }
                let tenths = Int(exactly: (min(max(ms, 0), 1e12) * 10).rounded()) ?? 0
                var whole = tenths / 10
                let first = at
                repeat {
                    put(UInt8(ascii: "0") + UInt8(whole % 10))
                    whole /= 10
                } while whole > 0
                out[first..<at].reverse()
                put(UInt8(ascii: "."))
                put(UInt8(ascii: "0") + UInt8(tenths % 10))
            }
            return at
        }
    }

    static func error(_ status: HTTPResponse.Status, _ message: String, id: String) -> Response {
        ErrorResponse.response(status, message, headers: [.requestID: id])
    }

    /// 96 random bits as 24 hex digits, written into the string (two `String(_:radix:)` and a
    /// concatenation cost a request more than its Server-Timing).
    static func newRequestID() -> String {
        var generator = SystemRandomNumberGenerator()
        let high = generator.next() as UInt64, low = generator.next() as UInt32
        return String(unsafeUninitializedCapacity: 24) { out in
            let digits: StaticString = "0123456789abcdef"
            for i in 0..<24 {
                let nibble = i < 16 ? Int(high >> (60 - 4 * i) & 15) : Int(low >> (28 - 4 * (i - 16)) & 15)
                out[i] = digits.utf8Start[nibble]
            }
            return 24
        }
    }
}
