import ArgumentParser
import Attache
import AttacheCommandLine
import AttacheEnrichment
import AttacheHTTPKit
import AttacheOperations
import AttacheRelay
import AttacheSupport
import AttacheTenants
import Configuration
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

    @Option(name: .setting(.port), help: .setting(.port, "Port", "default \(RelayConfiguration().port)"))
    var port: Int?

    @Option(name: .setting(.tlsCertificate), help: .setting(.tlsCertificate, "The relay's certificate chain, PEM: TLS with ALPN h2 and http/1.1"))
    var tlsCertificate: String?

    @Option(name: .setting(.tlsKey), help: .setting(.tlsKey, "The key of that certificate, PEM"))
    var tlsKey: String?

    @Option(name: .setting(.apnsUpstream), help: .setting(.apnsUpstream, "Where APNs requests go: a URL, or production or sandbox for Apple's hosts", "default production"))
    var apnsUpstream: String?

    @Option(name: .setting(.fcmUpstream), help: .setting(.fcmUpstream, "Where FCM requests go", "default \(RelayConfiguration.fcm)"))
    var fcmUpstream: String?

    @Option(name: .setting(.upstreamTimeout), help: .setting(.upstreamTimeout, "How long the upstream has to answer a forwarded request",
                                                             "default \(DurationText.format(RelayConfiguration().upstreamTimeout))"),
            transform: parseDuration)
    var upstreamTimeout: Duration?

    @OptionGroup var connections: ConnectionOptionGroup

    @Option(name: .setting(.maxConnectionsPerAddress), help: .setting(.maxConnectionsPerAddress, "Connections open at once from one client address; past that, new ones are closed",
                                                                      "default \(RelayConfiguration().maxConnectionsPerAddress)"))
    var maxConnectionsPerAddress: Int?

    @Option(name: .setting(.upstreamCA), help: .setting(.upstreamCA, "Certificate authorities (PEM) to trust for the upstreams instead of the system's: a private upstream or a double"))
    var upstreamCA: String?

    @Option(name: .setting(.apnsCertificate), help: .setting(.apnsCertificate, "Certificate-based APNs authentication: the provider's client certificate (PEM), presented to Apple on every APNs connection; with --apns-certificate-key"))
    var apnsCertificate: String?

    @Option(name: .setting(.apnsCertificateKey), help: .setting(.apnsCertificateKey, "The key of that certificate, PEM (openssl pkcs12 -nodes turns Apple's .p12 into both)"))
    var apnsCertificateKey: String?

    @Option(name: .setting(.apnsKey), help: .setting(.apnsKey, "The team's APNs signing key (.p8): the relay signs its own provider tokens and sends them instead of the client's authorization; with --apns-key-id and --apns-team-id"))
    var apnsKey: String?

    @Option(name: .setting(.apnsKeyID), help: .setting(.apnsKeyID, "The key's id, from Apple's developer account"))
    var apnsKeyID: String?

    @Option(name: .setting(.apnsTeamID), help: .setting(.apnsTeamID, "The team id"))
    var apnsTeamID: String?

    @Option(name: .setting(.fcmServiceAccount), help: .setting(.fcmServiceAccount, "A Google service account's key (JSON, from the Firebase console): the relay buys OAuth tokens with it and sends them to FCM instead of the client's authorization"))
    var fcmServiceAccount: String?

    @OptionGroup var metrics: MetricsPortOptionGroup

    @OptionGroup var tenants: TenantsOptionGroup

    @OptionGroup var process: ProcessOptionGroup

    @OptionGroup(title: "Cache options") var cache: CacheOptionGroup

    @OptionGroup(title: "Enrichment options") var enrich: EnrichOptionGroup

    @OptionGroup(title: "Storage options") var storage: StorageOptionGroup

    var flags: Flags {
        Flags([host, connections, metrics, tenants, process, cache, enrich, storage]) { flags in
            flags.set(.port, port)
            flags.set(.tlsCertificate, tlsCertificate)
            flags.set(.tlsKey, tlsKey)
            flags.set(.apnsUpstream, apnsUpstream)
            flags.set(.fcmUpstream, fcmUpstream)
            flags.set(.upstreamTimeout, upstreamTimeout)
            flags.set(.maxConnectionsPerAddress, maxConnectionsPerAddress)
            flags.set(.upstreamCA, upstreamCA)
            flags.set(.apnsCertificate, apnsCertificate)
            flags.set(.apnsCertificateKey, apnsCertificateKey)
            flags.set(.apnsKey, apnsKey)
            flags.set(.apnsKeyID, apnsKeyID)
            flags.set(.apnsTeamID, apnsTeamID)
            flags.set(.fcmServiceAccount, fcmServiceAccount)
        }
    }

    /// What the relay runs with. The provider credentials are live (a signing key, a token
    /// buyer), made from the settings beside the configuration, not held in it.
    struct Setup {
        var relay: RelayConfiguration
        var credentials: ProviderCredentials
        var options: Enrichment.Configuration
        var logFormat: LogFormat
        var metricsPort: Int?
        var tenantsFile: String?
    }

    func configure(_ settings: Settings) throws -> Setup {
        let reader = settings.attache
        let logFormat = try LogFormat(reader: reader)
        let relay = try RelayConfiguration(reader: reader)
        let credentials = try ProviderCredentials(reader: reader, caFile: relay.upstreamCA)
        let metricsPort = try reader.int(.metricsPort, in: 1...65535)
        let options = try Enrichment.Configuration(settings: settings, door: .service)
        return Setup(relay: relay, credentials: credentials, options: options, logFormat: logFormat, metricsPort: metricsPort,
                     tenantsFile: reader.text(.tenantsFile))
    }

    func run() async throws {
        try await reportingFailure("relay") { try await relay() }
    }

    private func relay() async throws {
        let setup = try setUp()
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

extension RelayConfiguration {
    /// Where the relay listens and how, where it forwards, and what its clients may take.
    init(reader: ConfigReader) throws {
        self.init()
        host = reader.text(.host, default: HostOptionGroup.defaultHost)
        port = try reader.int(.port, default: port, in: 0...65535)
        tls = try Self.identity(reader, .tlsCertificate, .tlsKey, "give both, or neither for clear text")
        let apns = reader.text(.apnsUpstream, default: "production")
        apnsUpstream = ["production": Self.apnsProduction, "sandbox": Self.apnsSandbox][apns] ?? apns
        fcmUpstream = reader.text(.fcmUpstream, default: fcmUpstream)
        for (key, url) in [(SettingKey.apnsUpstream, apnsUpstream), (.fcmUpstream, fcmUpstream)] {
            guard Self.isUpstreamURL(url) else {
                throw SettingError(key, .message("is an http(s) URL with a host\(key == .apnsUpstream ? ", or production or sandbox" : ""): not \(url)"))
            }
            guard !isOwnListener(url) else {
                throw SettingError(key, .message("\(url) is this relay's own listener (port \(port)): it would forward to itself"))
            }
        }
        upstreamTimeout = try reader.duration(.upstreamTimeout, default: upstreamTimeout)
        connections = try ConnectionLimits(reader: reader, defaults: connections)
        maxConnectionsPerAddress = try reader.int(.maxConnectionsPerAddress, default: maxConnectionsPerAddress, in: 1...1_000_000)
        upstreamCA = reader.text(.upstreamCA)
        apnsCertificate = try Self.identity(reader, .apnsCertificate, .apnsCertificateKey, "give both, or neither")
    }

    /// A certificate and its key, named by two settings that go together.
    private static func identity(_ reader: ConfigReader, _ certificate: SettingKey, _ key: SettingKey, _ advice: String) throws -> Identity? {
        switch (reader.text(certificate), reader.text(key)) {
        case (let certificatePath?, let keyPath?): return Identity(certificatePath: certificatePath, keyPath: keyPath)
        case (nil, nil): return nil
        default: throw ValidationError("\(certificate.option) and \(key.option) go together: \(advice)")
        }
    }
}

extension ProviderCredentials {
    /// The relay's own APNs signing key and FCM service account, when it holds them: read and
    /// checked at start, so that a bad file stops the start rather than every request.
    init(reader: ConfigReader, caFile: String?) throws {
        self.init()
        switch (reader.text(.apnsKey), reader.text(.apnsKeyID), reader.text(.apnsTeamID)) {
        case (let path?, let keyID?, let teamID?):
            guard let pem = try? readFile(path) else { throw SettingError(.apnsKey, .message("\(path) cannot be read")) }
            do {
                apns = try ProviderToken(keyPEM: String(decoding: pem, as: UTF8.self), keyID: keyID, teamID: teamID)
            } catch {
                throw SettingError(.apnsKey, .message("\(path) is not a P-256 private key in PEM (an APNs .p8 file)"))
            }
        case (nil, nil, nil):
            break
        default:
            throw ValidationError("--apns-key, --apns-key-id and --apns-team-id go together: give all three, or none to pass the client's authorization")
        }
        if let path = reader.text(.fcmServiceAccount) {
            guard let json = try? readFile(path) else { throw SettingError(.fcmServiceAccount, .message("\(path) cannot be read")) }
            do {
                fcm = try ServiceAccountToken(json: json, caFile: caFile)
            } catch let error as ServiceAccountToken.Invalid {
                throw SettingError(.fcmServiceAccount, .message("\(path): \(error)"))
            }
        }
    }
}
