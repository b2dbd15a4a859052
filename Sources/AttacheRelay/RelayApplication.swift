import Attache
import AttacheEnrichment
import AttacheHTTPKit
import AttacheOperations
import AttacheSupport
import AttacheTenants
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOSSL
#if canImport(Glibc)
import Glibc
#endif

/// `attache relay` as an application: what the command runs and what the tests drive.
public func buildRelayApplication(
    configuration: RelayConfiguration,
    enrichment: Enrichment,
    forwarder: Forwarder,
    tenants: Tenants? = nil,
    credentials: ProviderCredentials = ProviderCredentials(),
    metrics: EnrichmentMetrics = EnrichmentMetrics(),
    logger: Logger = Logger(label: "attache.relay"),
    connections: RelayConnections? = nil,
    onServerRunning: @escaping @Sendable (any Channel) async -> Void = { _ in }
) throws -> some ApplicationProtocol {
    let controller = RelayController(configuration: configuration, enrichment: enrichment, forwarder: forwarder, tenants: tenants,
                                     credentials: credentials, metrics: metrics, logger: logger)
    // Limits on a client's connection: an idle one is closed after the idle timeout; past the caps
    // (overall, per address) one is closed at once; HTTP/2 allows 100 concurrent streams, 16 KB
    // of headers per request and NIO's reset rate (swift-nio-http2's settings), each stream's body
    // within the body timeout; HTTP/1.1 the same headers, within the header and body timeouts;
    // bodies are capped by `maxBodyBytes` as they are read.
    let idle = configuration.connections.idleTimeout
    let http2 = RelayHTTP2(controller: controller, idleTimeout: idle, bodyTimeout: configuration.connections.bodyTimeout)
    // The cap is the connection's first handler's, over both protocols.
    let limits = { var limits = configuration.connections; limits.maxConnections = .max; return limits }()
    let watched = Connections()
    let http1 = HTTP1Channel.Configuration(additionalChannelHandlers: [ConnectionGuard(limits: limits, connections: watched), RequestMustEnd()],
                                           idleTimeout: idle.map { .nanoseconds($0.nanoseconds) },
                                           httpDecoderConfiguration: .init(maxHeaderListSize: 16 * 1024))
    let open = connections ?? RelayConnections(maximum: configuration.connections.maxConnections,
                                               maximumPerAddress: configuration.maxConnectionsPerAddress)
    let tls = try configuration.tls.map { try NIOSSLContext(configuration: try tlsConfiguration($0)) }
    let server = HTTPServerBuilder { responder in
        RelayChannel(responder: responder, tls: tls, http1: http1, http2: http2, cap: { ConnectionCap(connections: open, metrics: metrics) })
    }
    return Application(responder: RelayHTTP1Responder(controller: controller), server: server,
                       configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "Attache"),
                       onServerRunning: onServerRunning, logger: logger)
}

/// The relay's certificate chain and key from PEM files; ALPN `h2`, then `http/1.1`.
func tlsConfiguration(_ tls: RelayConfiguration.Identity) throws -> TLSConfiguration {
    let (chain, key) = try tls.load(certificateOption: "--tls-certificate", keyOption: "--tls-key")
    var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
    configuration.applicationProtocols = ["h2", "http/1.1"]
    return configuration
}

/// The relay's HTTP/1.1 requests (many FCM clients speak it), through Hummingbird: the body is read
/// up to the relay's cap, then the request goes the way HTTP/2's do (`RelayStream`).
struct RelayHTTP1Responder: HTTPResponder {
    let controller: RelayController

    func respond(to request: Request, context: BasicRequestContext) async throws -> Response {
        let fields = request.headers.map { HeaderField(name: $0.name.canonicalName, value: $0.value) }
        var relayed = RelayRequest(method: request.method.rawValue, path: request.head.path ?? "/", fields: fields, body: ByteBuffer())
        let route = RelayRoute(method: relayed.method, path: relayed.path, topic: relayed.topic)
        guard case .send(let provider, let app) = route else { return Self.response(route.refusal(relayed)!) }
        do {
            relayed.body = try await request.body.collect(upTo: controller.configuration.maxBodyBytes)
        } catch is NIOTooManyBytesError {
            return Self.response(provider.error(413, "PayloadTooLarge", request: relayed))
        } catch {
            // The client closed its connection before the request's end (`RequestMustEnd`):
            // nothing of it goes upstream, and nobody reads this answer.
            controller.metrics.abandoned()
            return Self.response(provider.error(400, "Abandoned", request: relayed))
        }
        return Self.response(await controller.relay(relayed, provider: provider, app: app))
    }

    static func response(_ answer: RelayAnswer) -> Response {
        var headers = HTTPFields()
        answer.forEachField { name, value in
            if let name = HTTPField.Name(name) { headers.append(HTTPField(name: name, value: value)) }
        }
        let status = answer.status == 508 ? HTTPResponse.Status(code: 508, reasonPhrase: "Loop Detected") : HTTPResponse.Status(code: answer.status)
        guard answer.body.readableBytes > 0 else { return Response(status: status, headers: headers) }
        return Response(status: status, headers: headers, body: .init(byteBuffer: answer.body))
    }
}

extension RelayConfiguration.Identity {
    /// The chain and its key from their PEM files, or an error that names the option, the file and
    /// what is wrong with it (NIOSSL says only `failedToLoadCertificate`).
    func load(certificateOption: String, keyOption: String) throws -> (chain: [NIOSSLCertificate], key: NIOSSLPrivateKey) {
        for (option, path) in [(certificateOption, certificatePath), (keyOption, keyPath)] where access(path, R_OK) != 0 {
            throw IdentityFileError(.unreadable, option: option, path: path, "\(option) \(path): \(String(cString: strerror(errno)))")
        }
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMFile(certificatePath)
        } catch {
            throw IdentityFileError(.notCertificate, option: certificateOption, path: certificatePath,
                                    "\(certificateOption) \(certificatePath) is not a PEM certificate chain (\(error))")
        }
        guard !chain.isEmpty else {
            throw IdentityFileError(.notCertificate, option: certificateOption, path: certificatePath,
                                    "\(certificateOption) \(certificatePath) holds no certificate")
        }
        do {
            return (chain, try NIOSSLPrivateKey(file: keyPath, format: .pem))
        } catch {
            throw IdentityFileError(.notKey, option: keyOption, path: keyPath, "\(keyOption) \(keyPath) is not a PEM private key (\(error))")
        }
    }
}

/// A certificate or key file that cannot be used, said with the option and the file.
public struct IdentityFileError: Error, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// Missing, or not readable by this process.
        case unreadable
        case notCertificate = "not-certificate"
        case notKey = "not-key"
    }

    public let code: Code
    /// The option that named the file (`--tls-cert`, say).
    public let option: String
    public let path: String
    public let description: String

    init(_ code: Code, option: String, path: String, _ description: String) {
        self.code = code
        self.option = option
        self.path = path
        self.description = description
    }
}
