import ArgumentParser
import Attache
import AttacheCommandLine
import AttacheEnrichment
import AttacheHTTPKit
import AttacheOperations
import AttacheRelay
import AttacheSupport
import AttacheTenants
import Logging
import ServiceLifecycle

struct RelayCommand: LongRunningCommand {
    static let configuration = CommandConfiguration(
        commandName: "attache relay",
        abstract: "Accept APNs and FCM send requests, enrich their payloads, and forward them to Apple or Google.",
        usage: "attache relay [<options>]",
        discussion: """
        Point an APNs or FCM client's host at the relay: POST /3/device/<token> (APNs provider API) and \
        POST /v1/projects/<project>/messages:send (FCM HTTP v1) are enriched when their payload has \
        mutable-content (else forwarded byte for byte), then forwarded over HTTP/2 with the client's own \
        headers (authorization included, unless the relay holds the credentials: --apns-key, \
        --apns-certificate, --fcm-service-account); the client gets the upstream's status, apns-id, apns-unique-id \
        and body, and Attache-Outcome. An upstream that cannot be reached is a 503 ServiceUnavailable in \
        the provider's shape. Without --tls-certificate the relay speaks clear text (a sidecar on \
        loopback): HTTP/2 with prior knowledge, or HTTP/1.1, told apart by the client's first bytes. Attache-Deadline-Ms names the enrichment's budget, as for the \
        service. Every option can also come from the ATTACHE_* variable named in its help.

        Examples:
          attache relay --tls-certificate relay.pem --tls-key relay.key --port 8443 --public-base-url https://cdn.example.com/media
          attache relay --port 8080 --apns-upstream sandbox --allow-address 10.0.0.0/8
        """
    )

    @OptionGroup var host: HostOptionGroup

    @Option(help: "Port [ATTACHE_PORT, default 8443].")
    var port: Int?

    @Option(help: "The relay's certificate chain, PEM: TLS with ALPN h2 and http/1.1 [ATTACHE_TLS_CERTIFICATE].")
    var tlsCertificate: String?

    @Option(help: "The key of that certificate, PEM [ATTACHE_TLS_KEY].")
    var tlsKey: String?

    @Option(help: "Where APNs requests go: a URL, or production or sandbox for Apple's hosts [ATTACHE_APNS_UPSTREAM, default production].")
    var apnsUpstream: String?

    @Option(help: "Where FCM requests go [ATTACHE_FCM_UPSTREAM, default https://fcm.googleapis.com].")
    var fcmUpstream: String?

    @Option(help: "How long the upstream has to answer a forwarded request [ATTACHE_UPSTREAM_TIMEOUT, default 10s].", transform: parseDuration)
    var upstreamTimeout: Duration?

    @OptionGroup var idle: IdleTimeoutOptionGroup

    @OptionGroup var connections: ConnectionOptionGroup

    @Option(help: "Connections open at once from one client address; past that, new ones are closed [ATTACHE_MAX_CONNECTIONS_PER_ADDRESS, default 256].")
    var maxConnectionsPerAddress: Int?

    @Option(help: "Certificate authorities (PEM) to trust for the upstreams instead of the system's: a private upstream or a double [ATTACHE_UPSTREAM_CA].")
    var upstreamCa: String?

    @Option(help: "Certificate-based APNs authentication: the provider's client certificate (PEM), presented to Apple on every APNs connection; with --apns-certificate-key [ATTACHE_APNS_CERTIFICATE].")
    var apnsCertificate: String?

    @Option(help: "The key of that certificate, PEM (openssl pkcs12 -nodes turns Apple's .p12 into both) [ATTACHE_APNS_CERTIFICATE_KEY].")
    var apnsCertificateKey: String?

    @Option(help: "The team's APNs signing key (.p8): the relay signs its own provider tokens and sends them instead of the client's authorization; with --apns-key-id and --apns-team-id [ATTACHE_APNS_KEY].")
    var apnsKey: String?

    @Option(help: "The key's id, from Apple's developer account [ATTACHE_APNS_KEY_ID].")
    var apnsKeyId: String?

    @Option(help: "The team id [ATTACHE_APNS_TEAM_ID].")
    var apnsTeamId: String?

    @Option(help: "A Google service account's key (JSON, from the Firebase console): the relay buys OAuth tokens with it and sends them to FCM instead of the client's authorization [ATTACHE_FCM_SERVICE_ACCOUNT].")
    var fcmServiceAccount: String?

    @OptionGroup var metrics: MetricsPortOptionGroup

    @OptionGroup var tenants: TenantsOptionGroup

    @OptionGroup var process: ProcessOptionGroup

    @OptionGroup(title: "Cache options") var cache: CacheOptionGroup

    @OptionGroup(title: "Enrichment options") var enrich: EnrichOptionGroup

    @OptionGroup(title: "Storage options") var storage: StorageOptionGroup

    struct Setup {
        var relay: RelayConfiguration
        var credentials: ProviderCredentials
        var options: Enrichment.Configuration
        var logFormat: LogFormat
        var metricsPort: Int?
        var tenantsFile: String?
    }

    func configure(_ settings: Settings) throws -> Setup {
        let logFormat = try process.format(settings)
        var relay = RelayConfiguration()
        relay.host = host.host(settings)
        relay.port = try settings.int(port, "ATTACHE_PORT", option: "--port", default: relay.port, in: 0...65535)
        let certificate = settings.string(tlsCertificate, "ATTACHE_TLS_CERTIFICATE")
        let key = settings.string(tlsKey, "ATTACHE_TLS_KEY")
        switch (certificate, key) {
        case (let certificate?, let key?): relay.tls = .init(certificatePath: certificate, keyPath: key)
        case (nil, nil): relay.tls = nil
        default: throw ValidationError("--tls-certificate and --tls-key go together: give both, or neither for clear text")
        }
        let apns = settings.string(apnsUpstream, "ATTACHE_APNS_UPSTREAM", default: "production")
        relay.apnsUpstream = ["production": RelayConfiguration.apnsProduction, "sandbox": RelayConfiguration.apnsSandbox][apns] ?? apns
        relay.fcmUpstream = settings.string(fcmUpstream, "ATTACHE_FCM_UPSTREAM", default: relay.fcmUpstream)
        for url in [relay.apnsUpstream, relay.fcmUpstream] where !RelayConfiguration.isUpstreamURL(url) {
            throw ValidationError("an upstream is an http(s) URL with a host, or production or sandbox for APNs: not \(url)")
        }
        for url in [relay.apnsUpstream, relay.fcmUpstream] where relay.isOwnListener(url) {
            throw ValidationError("the upstream \(url) is this relay's own listener (port \(relay.port)): it would forward to itself")
        }
        relay.upstreamTimeout = try settings.duration(upstreamTimeout, "ATTACHE_UPSTREAM_TIMEOUT", option: "--upstream-timeout",
                                                      default: relay.upstreamTimeout)
        let idleTimeout = try idle.timeout(settings, default: .seconds(300))
        relay.idleTimeout = idleTimeout > .zero ? idleTimeout : nil
        try connections.read(settings, into: &relay.connections)
        relay.maxConnectionsPerAddress = try settings.int(maxConnectionsPerAddress, "ATTACHE_MAX_CONNECTIONS_PER_ADDRESS",
                                                          option: "--max-connections-per-address",
                                                          default: relay.maxConnectionsPerAddress, in: 1...1_000_000)
        relay.upstreamCA = settings.string(upstreamCa, "ATTACHE_UPSTREAM_CA")
        switch (settings.string(apnsCertificate, "ATTACHE_APNS_CERTIFICATE"), settings.string(apnsCertificateKey, "ATTACHE_APNS_CERTIFICATE_KEY")) {
        case (let certificate?, let key?): relay.apnsCertificate = .init(certificatePath: certificate, keyPath: key)
        case (nil, nil): relay.apnsCertificate = nil
        default: throw ValidationError("--apns-certificate and --apns-certificate-key go together")
        }
        var credentials = ProviderCredentials()
        let keyPath = settings.string(apnsKey, "ATTACHE_APNS_KEY")
        let keyID = settings.string(apnsKeyId, "ATTACHE_APNS_KEY_ID")
        let teamID = settings.string(apnsTeamId, "ATTACHE_APNS_TEAM_ID")
        switch (keyPath, keyID, teamID) {
        case (let path?, let keyID?, let teamID?):
            guard let pem = try? readFile(path) else { throw ValidationError("--apns-key \(path) cannot be read") }
            do {
                credentials.apns = try ProviderToken(keyPEM: String(decoding: pem, as: UTF8.self), keyID: keyID, teamID: teamID)
            } catch {
                throw ValidationError("--apns-key \(path) is not a P-256 private key in PEM (an APNs .p8 file)")
            }
        case (nil, nil, nil):
            break
        default:
            throw ValidationError("--apns-key, --apns-key-id and --apns-team-id go together: give all three, or none to pass the client's authorization")
        }
        if let path = settings.string(fcmServiceAccount, "ATTACHE_FCM_SERVICE_ACCOUNT") {
            guard let json = try? readFile(path) else { throw ValidationError("--fcm-service-account \(path) cannot be read") }
            do {
                credentials.fcm = try ServiceAccountToken(json: json, caFile: relay.upstreamCA)
            } catch let error as ServiceAccountToken.Invalid {
                throw ValidationError("--fcm-service-account \(path): \(error)")
            }
        }
        let metricsPort = try metrics.port(settings)
        var options = try enrich.options(settings, storage: storage, defaultBudget: DeadlinePolicy.service.default)
        options.cache = try cache.configuration(settings)
        return Setup(relay: relay, credentials: credentials, options: options, logFormat: logFormat, metricsPort: metricsPort, tenantsFile: tenants.path(settings))
    }

    func run() async throws {
        try await reportingFailure("relay") { try await relay() }
    }

    private func relay() async throws {
        let setup = try await setUp()
        let observed = try bootstrapProcess(logFormat: setup.logFormat)
        let registry = observed.registry
        let logger = Logger(label: "attache.relay")
        let (enrichment, tenants) = try await startEnrichment(setup.options, tenantsFile: setup.tenantsFile, logger: logger)
        let relay = setup.relay
        let forwarder = try Forwarder(configuration: relay)
        defer { forwarder.shutdown() }
        var services: [any Service] = observed.services + [EnrichmentService(enrichment)] + (tenants.map { [$0] } ?? [])
        // Said once the socket is bound: a port in use is then the one line that fails the start.
        let started: Logger.Metadata = [
            "attache.address": "\(setup.relay.host):\(setup.relay.port)", "attache.tls": "\(setup.relay.tls == nil ? "off" : "on")",
            "attache.apns": "\(setup.relay.apnsUpstream)", "attache.fcm": "\(setup.relay.fcmUpstream)",
        ]
        let connections = RelayConnections(maximum: relay.connections.maxConnections, maximumPerAddress: relay.maxConnectionsPerAddress)
        services.append(try buildRelayApplication(configuration: relay, enrichment: enrichment, forwarder: forwarder, tenants: tenants?.tenants,
                                                  credentials: setup.credentials, logger: logger, connections: connections) { _ in
            logger.info("attache relay listening", metadata: started)
        })
        services.append(MemoryRelease { connections.takeClosed() > 0 })
        if let port = setup.metricsPort {
            services.append(buildProbeApplication(host: setup.relay.host, port: port, registry: registry, healthy: { true }, logger: logger))
        }
        let group = ServiceGroup(configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        let addresses = ["\(setup.relay.host):\(setup.relay.port)"] + (setup.metricsPort.map { ["\(setup.relay.host):\($0)"] } ?? [])
        try await listening(on: addresses) { try await group.run() }
    }
}
