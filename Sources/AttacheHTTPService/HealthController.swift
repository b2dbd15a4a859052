import Attache
import AttacheEnrichment
import AttacheStore
import AttacheSupport
import HTTPTypes
import Hummingbird
import NIOCore
import Prometheus

/// `/healthz` (alive), `/readyz` (fetch engine running, media directory writable and not full),
/// `/metrics`.
struct HealthController: Sendable {
    let enrichment: Enrichment
    let mediaDirectory: String
    /// Free space under which the store counts as full (the largest attachment it may have to take).
    let minimumFreeBytes: Int
    let store: StoreLocation
    let registry: PrometheusCollectorRegistry?

    func register(on router: some RouterMethods<AttacheRequestContext>) {
        router.get("/healthz") { _, _ in Self.text(.ok, "ok\n") }
        router.get("/readyz") { _, _ in
            guard enrichment.services.engine.isRunning else { return Self.text(.serviceUnavailable, "fetch engine stopped\n") }
            guard isWritableDirectory(mediaDirectory) else { return Self.text(.serviceUnavailable, "media directory not writable\n") }
            guard freeBytes(on: mediaDirectory) >= minimumFreeBytes else {
                return Self.text(.serviceUnavailable, "media directory full\n")
            }
            // A directory store is the media directory just checked; a remote one is asked.
            if !store.isLocal, let why = await enrichment.services.store.unavailability() {
                return Self.text(.serviceUnavailable, "store: \(why)\n")
            }
            return Self.text(.ok, "ready\n")
        }
    }

    func registerMetrics(on router: some RouterMethods<AttacheRequestContext>) {
        Self.registerMetrics(registry, on: router)
    }

    /// Prometheus's text format; 404 without a registry.
    static func registerMetrics(_ registry: PrometheusCollectorRegistry?, on router: some RouterMethods<AttacheRequestContext>) {
        router.get("/metrics") { _, _ in
            guard let registry else { throw HTTPError(.notFound) }
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer())))
        }
    }

    static func text(_ status: HTTPResponse.Status, _ text: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/plain"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }

}
