import HTTPTypes
import Hummingbird
import NIOCore
import Prometheus

/// What every long-running door answers its orchestrator and Prometheus with: a plain-text status
/// and `/metrics` in the Prometheus text format.
public enum Probes {
    public static func registerMetrics(_ registry: PrometheusCollectorRegistry?, on router: some RouterMethods<AttacheRequestContext>) {
        router.get("/metrics") { _, _ in
            guard let registry else { throw HTTPError(.notFound) }
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer())))
        }
    }

    public static func text(_ status: HTTPResponse.Status, _ text: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/plain"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}
