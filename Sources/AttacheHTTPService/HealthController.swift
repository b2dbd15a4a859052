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
/// `/metrics`.
struct HealthController: Sendable {
    let enrichment: Enrichment
    let mediaDirectory: String
    /// Free space under which the store counts as full (the largest attachment it may have to take).
    let minimumFreeBytes: Int
    let store: StoreLocation
    let registry: PrometheusCollectorRegistry?

    func register(on router: some RouterMethods<AttacheRequestContext>) {
        router.get("/healthz") { _, _ in Probes.text(.ok, "ok\n") }
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
