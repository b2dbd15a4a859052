import ArgumentParser
import Attache
import AttacheCommandLine
import AttacheEnrichment
import AttacheHTTPKit
import AttacheOperations
import AttacheQueueWorker
import AttacheTenants
import AttacheSupport
import Configuration
import Logging
import ServiceLifecycle

struct WorkerCommand: LongRunningCommand {
    static let configuration = CommandConfiguration(
        commandName: "attache worker",
        abstract: "Take payloads off a NATS JetStream stream, enrich each, and publish one payload out per payload in.",
        usage: "attache worker [<options>]",
        discussion: """
        Input: stream ATTACHE_IN (subject attache.in), read through the durable pull consumer `attache` that \
        every worker shares. Output: subject attache.out, captured by stream ATTACHE_OUT, with headers \
        Attache-Outcome (outcome; reason), Attache-Source-Id and Nats-Msg-Id (the input's Nats-Msg-Id, else its \
        stream sequence), so the output stream drops a republish after a crash. Streams and the consumer are \
        made when missing, used as they are when present. An input is acked only after its output is \
        acknowledged. Deadline: Attache-Deadline-Ms, else --deadline, counted from when the message was \
        published — time waiting in the stream counts, and a message already late goes out at once as the \
        original (reason timeout). A message that is not a JSON object goes out as it came (fallback, \
        invalid-payload). SIGTERM/SIGINT: stop fetching, finish what is in flight within its deadlines, exit 0. \
        Every option can also come from the ATTACHE_* variable named in its help.

        Examples:
          attache worker --nats nats://127.0.0.1:4222 --allow-address 127.0.0.1/32
          attache worker --nats nats://nats:4222 --store s3://push-media/attache/ --public-base-url https://cdn.example.com/attache
        """
    )

    /// The defaults the help names.
    private static let defaults = QueueWorker.Configuration(nats: NATSOptions(url: NATSOptions.defaultURL))

    @Option(name: [.customLong("nats"), .setting(.natsURL)], help: .setting(.natsURL, "NATS server URL(s), comma-separated", "default \(NATSOptions.defaultURL)"))
    var nats: String?

    @Option(name: .setting(.natsUser), help: .setting(.natsUser, "NATS user; the password from \(SettingKey.natsPassword.variable)"))
    var natsUser: String?

    @Option(name: .setting(.natsCredentials), help: .setting(.natsCredentials, "A NATS credentials file (.creds: JWT and NKey seed)"))
    var natsCredentials: String?

    @Option(name: .setting(.natsCA), help: .setting(.natsCA, "A CA file: connect with TLS, trusting that CA. The token comes from \(SettingKey.natsToken.variable)"))
    var natsCA: String?

    @Flag(name: .setting(.natsTLS), help: .setting(.natsTLS, "Connect with TLS, trusting the system's CAs", "true or false"))
    var natsTLS = false

    @Option(name: .setting(.inputStream), help: .setting(.inputStream, "Input stream", "default \(defaults.inputStream)"))
    var inputStream: String?

    @Option(name: .setting(.inputSubject), help: .setting(.inputSubject, "Input subject", "default \(defaults.inputSubject)"))
    var inputSubject: String?

    @Option(name: .setting(.consumer), help: .setting(.consumer, "Durable consumer shared by every worker", "default \(defaults.consumer)"))
    var consumer: String?

    @Option(name: .setting(.outputStream), help: .setting(.outputStream, "Output stream", "default \(defaults.outputStream)"))
    var outputStream: String?

    @Option(name: .setting(.outputSubject), help: .setting(.outputSubject, "Output subject", "default \(defaults.outputSubject)"))
    var outputSubject: String?

    @Option(name: .setting(.concurrency), help: .setting(.concurrency, "Messages in flight at once; also the consumer's max ack pending when it is made", "default \(defaults.concurrency)"))
    var concurrency: Int?

    @Option(name: .setting(.ackWait), help: .setting(.ackWait, "How long the stream waits for an ack before delivering again, when the consumer is made",
                                                     "default \(DurationText.format(defaults.ackWait))"),
            transform: parseDuration)
    var ackWait: Duration?

    @Option(name: .setting(.maxDeliver), help: .setting(.maxDeliver, "Deliveries of one message before the stream gives up, when the consumer is made", "default \(defaults.maxDeliver)"))
    var maxDeliver: Int?

    @OptionGroup var metrics: MetricsPortOptionGroup

    @OptionGroup var tenants: TenantsOptionGroup

    @OptionGroup var host: HostOptionGroup

    @OptionGroup var process: ProcessOptionGroup

    @OptionGroup(title: "Cache options") var cache: CacheOptionGroup

    @OptionGroup(title: "Enrichment options") var enrich: EnrichOptionGroup

    @OptionGroup(title: "Storage options") var storage: StorageOptionGroup

    @OptionGroup(title: "Conversion options") var conversions: ConversionWaitOptionGroup

    var flags: Flags {
        Flags([metrics, tenants, host, process, cache, enrich, storage, conversions]) { flags in
            flags.set(.natsURL, nats)
            flags.set(.natsUser, natsUser)
            flags.set(.natsCredentials, natsCredentials)
            flags.set(.natsCA, natsCA)
            flags.set(.natsTLS, natsTLS)
            flags.set(.inputStream, inputStream)
            flags.set(.inputSubject, inputSubject)
            flags.set(.consumer, consumer)
            flags.set(.outputStream, outputStream)
            flags.set(.outputSubject, outputSubject)
            flags.set(.concurrency, concurrency)
            flags.set(.ackWait, ackWait)
            flags.set(.maxDeliver, maxDeliver)
        }
    }

    /// What the worker runs with: `run` starts it, `attache config worker` prints it.
    struct Setup {
        var queue: QueueWorker.Configuration
        var options: Enrichment.Configuration
        var logFormat: LogFormat
        /// Where `/healthz` and `/metrics` are served; nil: nowhere.
        var probe: (host: String, port: Int)?
        var tenantsFile: String?
    }

    func configure(_ settings: Settings) throws -> Setup {
        let reader = settings.attache
        let logFormat = try LogFormat(reader: reader)
        let queue = try QueueWorker.Configuration(reader: reader)
        let probePort = try reader.int(.metricsPort, in: 1...65535)
        let probeHost = reader.text(.host, default: HostOptionGroup.defaultHost)
        let options = try Enrichment.Configuration(settings: settings, door: .worker)
        return Setup(queue: queue, options: options, logFormat: logFormat, probe: probePort.map { (probeHost, $0) },
                     tenantsFile: reader.text(.tenantsFile))
    }

    func run() async throws {
        try await reportingFailure("worker") { try await work() }
    }

    private func work() async throws {
        let setup = try setUp()
        let observed = try bootstrapProcess(logFormat: setup.logFormat)
        let registry = observed.registry
        let logger = Logger(label: "attache.worker")
        let queue = setup.queue
        if setup.options.runtime.deadlinePolicy.default > queue.longestBudget {
            logger.warning("--deadline is cut to what --ack-wait leaves for the publish", metadata: [
                "attache.deadline_s": "\(setup.options.runtime.deadlinePolicy.default.seconds)", "attache.longest_s": "\(queue.longestBudget.seconds)",
            ])
        }

        let (enrichment, tenants) = try await startEnrichment(setup.options, tenantsFile: setup.tenantsFile, logger: logger)
        let state = WorkerState()
        var services: [any Service] = observed.services + [EnrichmentService(enrichment)] + (tenants.map { [$0] } ?? [])
        services.append(QueueWorker(configuration: queue, enrichment: enrichment, tenants: tenants?.tenants, state: state, logger: logger))
        if let probe = setup.probe {
            services.append(buildProbeApplication(host: probe.host, port: probe.port,
                                                  registry: registry, healthy: { state.isHealthy }, logger: logger))
        }
        // The enrichment first, so that it is stopped last, after the worker has finished.
        let group = ServiceGroup(configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await listening(on: setup.probe.map { ["\($0.host):\($0.port)"] } ?? []) { try await group.run() }
    }
}

extension NATSOptions {
    static let defaultURL = "nats://127.0.0.1:4222"

    /// The server and how to authenticate to it; the password and the token are variables only (a
    /// flag would show in every process list).
    init(reader: ConfigReader) throws {
        self.init(url: reader.text(.natsURL, default: Self.defaultURL))
        user = reader.text(.natsUser)
        password = reader.text(.natsPassword, secret: true)
        token = reader.text(.natsToken, secret: true)
        credentials = reader.text(.natsCredentials)
        ca = reader.text(.natsCA)
        tls = try reader.flag(.natsTLS)
    }
}

extension QueueWorker.Configuration {
    /// The NATS connection, the streams and the consumer, and how much is in flight.
    init(reader: ConfigReader) throws {
        self.init(nats: try NATSOptions(reader: reader))
        inputStream = reader.text(.inputStream, default: inputStream)
        inputSubject = reader.text(.inputSubject, default: inputSubject)
        consumer = reader.text(.consumer, default: consumer)
        outputStream = reader.text(.outputStream, default: outputStream)
        outputSubject = reader.text(.outputSubject, default: outputSubject)
        concurrency = try reader.int(.concurrency, default: concurrency, in: 1...10_000)
        ackWait = try reader.duration(.ackWait, default: ackWait)
        maxDeliver = try reader.int(.maxDeliver, default: maxDeliver, in: 1...1000)
    }
}
