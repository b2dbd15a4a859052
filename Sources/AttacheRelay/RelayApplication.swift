import Attache
import AttacheEnrichment
import AttacheHTTPKit
import AttacheOperations
import AttacheSupport
import AttacheTenants
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
    let router = Router()
    router.add(middleware: BadPath())
    RelayController(configuration: configuration, enrichment: enrichment, forwarder: forwarder, tenants: tenants,
                    credentials: credentials, metrics: metrics, logger: logger)
        .register(on: router)
    // Limits on a client's connection: an idle one is closed after `idleTimeout`; past the caps
    // (overall, per address) one is closed at once; HTTP/2 allows 100 concurrent streams, 16 KB
    // of headers per request and NIO's reset rate (swift-nio-http2's settings); HTTP/1.1 the same
    // headers, within the header and body timeouts; bodies are capped by `maxBodyBytes` as they
    // are read.
    let idle = configuration.idleTimeout
    let http2 = RelayHTTP2(idleTimeout: idle, onReset: { metrics.clientReset() })
    // The cap is the connection's first handler's, over both protocols; a year stands for never.
    let limits = ConnectionLimits(headerTimeout: configuration.connections.headerTimeout, bodyTimeout: configuration.connections.bodyTimeout,
                                  idleTimeout: idle ?? .seconds(365 * 86_400), maxConnections: .max)
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
    return Application(router: router, server: server,
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

/// A path that is neither send API is Apple's `404 {"reason":"BadPath"}`, not an empty 404.
struct BadPath<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            return Provider.apns.error(.notFound, "BadPath", request: request)
        }
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
