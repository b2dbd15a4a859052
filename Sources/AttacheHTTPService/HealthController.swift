import AttacheHTTPKit
import Attache
import AttacheEnrichment
import AttacheStore
import AttacheSupport
import HTTPTypes
import Hummingbird
import NIOCore
import Prometheus

/// `/healthz` (alive), `/readyz` (fetch engine running, media directory writable and not full),
/// `/metrics`, and `/openapi.yaml`, the HTTP contract of this very build.
struct HealthController: Sendable {
    let enrichment: Enrichment
    let mediaDirectory: String
    /// Free space under which the store counts as full (the largest attachment it may have to take).
    let minimumFreeBytes: Int
    let store: StoreLocation
    let registry: PrometheusCollectorRegistry?

    func register(on router: some RouterMethods<AttacheRequestContext>) {
        router.get("/healthz") { _, _ in Probes.text(.ok, "ok\n") }
        // docs/openapi.yaml as it was when this binary was built (compiled in: no file to ship
        // beside it), open like the probes: it holds no secret, and a client generator or a
        // gateway reads it before it has a token.
        router.get("/openapi.yaml") { _, _ in
            var headers = HTTPFields()
            headers[.contentType] = "application/yaml"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: PackageResources.openapi_yaml)))
        }
        router.get("/readyz") { _, _ in
            guard enrichment.services.engine.isRunning else { return Probes.text(.serviceUnavailable, "fetch engine stopped\n") }
            guard isWritableDirectory(mediaDirectory) else { return Probes.text(.serviceUnavailable, "media directory not writable\n") }
            guard freeBytes(on: mediaDirectory) >= minimumFreeBytes else {
                return Probes.text(.serviceUnavailable, "media directory full\n")
            }
            // A directory store is the media directory just checked; a remote one is asked.
            if !store.isLocal, let why = await enrichment.services.store.unavailability() {
                return Probes.text(.serviceUnavailable, "store: \(why)\n")
            }
            return Probes.text(.ok, "ready\n")
        }
    }

    func registerMetrics(on router: some RouterMethods<AttacheRequestContext>) {
        Probes.registerMetrics(registry, on: router)
    }

    /// Prometheus's text format; 404 without a registry.

}
