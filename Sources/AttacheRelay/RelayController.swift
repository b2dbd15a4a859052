import AttacheHTTPKit
import Attache
import AttacheEnrichment
import AttacheOperations
import AttachePayload
import AttacheSupport
import AttacheTenants
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// The two send APIs the relay speaks, and how each says what went wrong.
enum Provider: Sendable {
    case apns, fcm

    /// An error in the provider's own documented shape: APNs `{"reason": "BadPath"}` with the
    /// request's `apns-id` (a new one when it had none), as Apple answers every request — a client
    /// reads it from every answer (aioapns drops the connection without it); Google's
    /// `{"error": {"code", "message", "status"}}`.
    func error(_ status: HTTPResponse.Status, _ reason: String, request: Request? = nil, outcome: String? = nil,
               budget: Duration? = nil) -> Response {
        let body: JSONValue
        switch self {
        case .apns:
            body = .object(JSONObject(["reason": .string(reason)]))
        case .fcm:
            let code = ["ServiceUnavailable": "UNAVAILABLE", "PayloadTooLarge": "INVALID_ARGUMENT", "BadPath": "NOT_FOUND",
                        "MethodNotAllowed": "INVALID_ARGUMENT"][reason] ?? "INTERNAL"
            body = .object(JSONObject(["error": .object(JSONObject([
                "code": .number(String(status.code)), "message": .string(reason), "status": .string(code),
            ]))]))
        }
        var fields = HTTPFields()
        fields[.contentType] = "application/json"
        if self == .apns { fields[.apnsID] = request?.headers[.apnsID].flatMap { $0.isEmpty ? nil : $0 } ?? UUID().uuidString }
        if let outcome { fields[.attacheOutcome] = outcome }
        if let budget { fields[.attacheDeadline] = String(Int(budget.milliseconds)) }
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: JSONWriter.bytes(body))))
    }
}

extension HTTPField.Name {
    static let apnsTopic = Self("apns-topic")!
    static let apnsID = Self("apns-id")!
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

    func register(on router: some RouterMethods<BasicRequestContext>) {
        router.post("/3/device/:token") { request, _ in await relay(request, provider: .apns, app: request.headers[.apnsTopic]) }
        router.post("/v1/projects/:project/messages:send") { request, context in
            await relay(request, provider: .fcm, app: context.parameters.get("project"))
        }
        for method in [HTTPRequest.Method.get, .put, .delete, .patch] {
            router.on("/3/device/:token", method: method) { request, _ in
                Provider.apns.error(.methodNotAllowed, "MethodNotAllowed", request: request)
            }
            router.on("/v1/projects/:project/messages:send", method: method) { _, _ in
                Provider.fcm.error(.methodNotAllowed, "MethodNotAllowed")
            }
        }
    }

    /// `app`: the APNs topic or the FCM project, which names the tenant when there are tenants.
    func relay(_ request: Request, provider: Provider, app: String?) async -> Response {
        if request.headers[values: .via].contains(where: { $0.contains(hop) }) {
            logger.warning("a request came back to the relay that forwarded it: the upstream leads here")
            return provider.error(.init(code: 508, reasonPhrase: "Loop Detected"), "LoopDetected", request: request)
        }
        let received: ByteBuffer
        do {
            received = try await request.body.collect(upTo: configuration.maxBodyBytes)
        } catch is NIOTooManyBytesError {
            return provider.error(.contentTooLarge, "PayloadTooLarge", request: request)
        } catch {
            // The client reset the stream or closed its connection before the request's end
            // (`RequestMustEnd`): nothing of it goes upstream, and nobody reads this answer.
            metrics.abandoned()
            return provider.error(.badRequest, "Abandoned", request: request)
        }
        // A tenant past its limits, or a request of no tenant, is still sent: unenriched, with the
        // reason in Attache-Outcome (a relay that held notifications back would lose them).
        let gate = AdmissionGate(tenants: tenants, policy: enrichment.deadlinePolicy, metrics: metrics)
        var admission: Admission?, passReason: Reason?
        switch gate.admit(app.flatMap { tenants?.tenant(app: $0) }) {
        case .admitted(let admitted): admission = admitted
        case .refused: passReason = .tenantLimited
        case .unknownTenant: passReason = .unknownTenant
        }
        let budget = (admission?.policy ?? gate.policy).budget(header: request.headers[.attacheDeadline])
        // The tenant's slot is held while its payload is enriched (which cannot throw), not while
        // the upstream answers.
        let (body, outcome) = await enriched(received, provider: provider, budget: budget, admission: admission, passReason: passReason)
        admission?.leave()

        var fields = request.headers.map { (name: $0.name.canonicalName, value: $0.value) }
        do {
            if let authorization = try await credential(for: provider) {
                fields.removeAll { $0.name == "authorization" }
                fields.append((name: "authorization", value: authorization))
            }
        } catch {
            // The error names what failed (a refused service account, an unreachable token
            // endpoint), never a key or a token.
            logger.error("no credential for the upstream", metadata: ["attache.error": "\(error)"])
            metrics.relayed(status: 503)
            return provider.error(.serviceUnavailable, "ServiceUnavailable", request: request, outcome: Self.undelivered(outcome),
                                  budget: budget)
        }
        fields.append((name: "via", value: "2 " + hop))
        let path = request.uri.path + (request.uri.query.map { "?" + $0 } ?? "")
        let answer: Forwarder.Answer
        do {
            answer = try await forwarder.forward(provider, path: path, fields: fields, body: body, timeout: configuration.upstreamTimeout)
        } catch {
            logger.warning("upstream not reached", metadata: ["attache.error": "\(error)"])
            metrics.relayed(status: 503)
            return provider.error(.serviceUnavailable, "ServiceUnavailable", request: request, outcome: Self.undelivered(outcome),
                                  budget: budget)
        }
        metrics.relayed(status: answer.status)
        var headers = HTTPFields()
        for (name, value) in answer.headers {
            if let field = HTTPField.Name(name) { headers.append(HTTPField(name: field, value: value)) }
        }
        headers[.attacheOutcome] = answer.status == 200 ? outcome : Self.undelivered(outcome)
        headers[.attacheDeadline] = String(Int(budget.milliseconds))
        // No body is no DATA frame: Apple's 200 is a HEADERS frame alone, and a client (aioapns)
        // parses any DATA it gets as JSON.
        guard answer.body.readableBytes > 0 else { return Response(status: .init(code: answer.status), headers: headers) }
        return Response(status: .init(code: answer.status), headers: headers, body: .init(byteBuffer: answer.body))
    }

    /// The relay's own credential for `provider`, when it holds one; nil: the client's goes through.
    func credential(for provider: Provider) async throws -> String? {
        switch provider {
        case .apns: try credentials.apns?.authorization()
        case .fcm: try await credentials.fcm?.authorization()
        }
    }

    /// The body to forward and the outcome to tell the client. Only a body that names
    /// `mutable-content` (or, to FCM, an `image`) is parsed; anything the pipeline cannot enrich
    /// goes as it came. `passReason`: not enriched (no tenant, or one past its limits): the body
    /// goes as it came.
    func enriched(_ received: ByteBuffer, provider: Provider, budget: Duration, admission: Admission? = nil,
                  passReason: Reason? = nil) async -> (body: ByteBuffer, outcome: String) {
        let androidImage = provider == .fcm && enrichment.services.configuration.androidCopies
        let gated = received.withUnsafeReadableBytes { Self.find(Self.gate, in: $0) || androidImage && Self.find(Self.image, in: $0) }
        guard gated else {
            metrics.request(outcome: .passthrough, reason: .notMutable)
            return (received, Self.notMutable)
        }
        if let passReason {
            metrics.request(outcome: .fallback, reason: passReason)
            return (received, Emission.outcomeHeader(.fallback, passReason))
        }
        do {
            let emission = try await enrichment.enrich(Array(buffer: received), identifier: "relay", budget: budget, logger: logger,
                                                       scope: admission?.scope ?? .unscoped)
            if let admission { admission.finish(emission) } else { metrics.request(emission.report) }
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
