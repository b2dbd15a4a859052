import Attache
import HTTPTypes
import Hummingbird
import NIOCore
import Prometheus
#if canImport(Glibc)
import Glibc
#endif

/// `/healthz` (alive), `/readyz` (fetch engine running, media directory writable and not full),
/// `/metrics`.
struct HealthController: Sendable {
    let enrichment: Enrichment
    let mediaDirectory: String
    /// Free space under which the store counts as full (the largest attachment it may have to take).
    let minimumFreeBytes: Int
    let registry: PrometheusCollectorRegistry?

    func register(on router: some RouterMethods<AttacheRequestContext>) {
        router.get("/healthz") { _, _ in Self.text(.ok, "ok\n") }
        router.get("/readyz") { _, _ in
            guard enrichment.services.engine.isRunning else { return Self.text(.serviceUnavailable, "fetch engine stopped\n") }
            guard Self.writable(mediaDirectory) else { return Self.text(.serviceUnavailable, "media directory not writable\n") }
            guard Self.freeBytes(mediaDirectory) >= minimumFreeBytes else {
                return Self.text(.serviceUnavailable, "media directory full\n")
            }
            if let why = await enrichment.services.store.unavailability() {
                return Self.text(.serviceUnavailable, "store: \(why)\n")
            }
            return Self.text(.ok, "ready\n")
        }
    }

    func registerMetrics(on router: some RouterMethods<AttacheRequestContext>) {
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

    /// Bytes an unprivileged writer may still use on the directory's filesystem.
    static func freeBytes(_ directory: String) -> Int {
        var info = statvfs()
        guard statvfs(directory, &info) == 0 else { return 0 }
        return Int(info.f_bavail) * Int(info.f_frsize)
    }

    static func writable(_ directory: String) -> Bool {
        var template = Array("\(directory)/.ready-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { return false }
        close(fd)
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        return true
    }
}
