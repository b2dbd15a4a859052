import ArgumentParser
import Attache
import AttacheCommandLine
import AttacheEnrichment
import AttacheHTTPKit
import AttacheOperations
import AttacheQueueWorker
import AttacheTenants
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

    @Option(help: "NATS server URL(s), comma-separated [ATTACHE_NATS_URL, default nats://127.0.0.1:4222].")
    var nats: String?

    @Option(help: "NATS user [ATTACHE_NATS_USER]; the password from ATTACHE_NATS_PASSWORD.")
    var natsUser: String?

    @Option(help: "A NATS credentials file (.creds: JWT and NKey seed) [ATTACHE_NATS_CREDENTIALS].")
    var natsCredentials: String?

    @Option(help: "A CA file: connect with TLS, trusting that CA [ATTACHE_NATS_CA]. The token comes from ATTACHE_NATS_TOKEN.")
    var natsCA: String?

    @Flag(help: "Connect with TLS, trusting the system's CAs [ATTACHE_NATS_TLS=true].")
    var natsTLS = false

    @Option(help: "Input stream [ATTACHE_INPUT_STREAM, default ATTACHE_IN].")
    var inputStream: String?

    @Option(help: "Input subject [ATTACHE_INPUT_SUBJECT, default attache.in].")
    var inputSubject: String?

    @Option(help: "Durable consumer shared by every worker [ATTACHE_CONSUMER, default attache].")
    var consumer: String?

    @Option(help: "Output stream [ATTACHE_OUTPUT_STREAM, default ATTACHE_OUT].")
    var outputStream: String?

    @Option(help: "Output subject [ATTACHE_OUTPUT_SUBJECT, default attache.out].")
    var outputSubject: String?

    @Option(help: "Messages in flight at once; also the consumer's max ack pending when it is made [ATTACHE_CONCURRENCY, default 64].")
    var concurrency: Int?

    @Option(help: "How long the stream waits for an ack before delivering again, when the consumer is made [ATTACHE_ACK_WAIT, default 30s].", transform: parseDuration)
    var ackWait: Duration?

    @Option(help: "Deliveries of one message before the stream gives up, when the consumer is made [ATTACHE_MAX_DELIVER, default 10].")
    var maxDeliver: Int?

    @OptionGroup var metrics: MetricsPortOptionGroup

    @OptionGroup var tenants: TenantsOptionGroup

    @OptionGroup var host: HostOptionGroup

    @OptionGroup var process: ProcessOptionGroup

    @OptionGroup(title: "Cache options") var cache: CacheOptionGroup

    @OptionGroup(title: "Enrichment options") var enrich: EnrichOptionGroup

    @OptionGroup(title: "Storage options") var storage: StorageOptionGroup

    @OptionGroup(title: "Conversion options") var conversions: ConversionWaitOptionGroup

    /// What the worker runs with, read from the flags, then the environment: `run` starts it,
    /// `attache config worker` prints it.
    struct Setup {
        var queue: QueueWorker.Configuration
        var options: Enrichment.Configuration
        var logFormat: LogFormat
        /// Where `/healthz` and `/metrics` are served; nil: nowhere.
        var probe: (host: String, port: Int)?
        var tenantsFile: String?
    }

    func configure(_ settings: Settings) throws -> Setup {
        let logFormat = try process.format(settings)
        var nats = NATSOptions(url: settings.string(self.nats, "ATTACHE_NATS_URL", default: "nats://127.0.0.1:4222"))
        nats.user = settings.string(natsUser, "ATTACHE_NATS_USER")
        nats.password = settings.secret("ATTACHE_NATS_PASSWORD")
        nats.token = settings.secret("ATTACHE_NATS_TOKEN")
        nats.credentials = settings.string(natsCredentials, "ATTACHE_NATS_CREDENTIALS")
        nats.ca = settings.string(natsCA, "ATTACHE_NATS_CA")
        nats.tls = try settings.flag(natsTLS, "ATTACHE_NATS_TLS")

        var queue = QueueWorker.Configuration(nats: nats)
        queue.inputStream = settings.string(inputStream, "ATTACHE_INPUT_STREAM", default: queue.inputStream)
        queue.inputSubject = settings.string(inputSubject, "ATTACHE_INPUT_SUBJECT", default: queue.inputSubject)
        queue.consumer = settings.string(consumer, "ATTACHE_CONSUMER", default: queue.consumer)
        queue.outputStream = settings.string(outputStream, "ATTACHE_OUTPUT_STREAM", default: queue.outputStream)
        queue.outputSubject = settings.string(outputSubject, "ATTACHE_OUTPUT_SUBJECT", default: queue.outputSubject)
        queue.concurrency = try settings.int(concurrency, "ATTACHE_CONCURRENCY", option: "--concurrency", default: queue.concurrency, in: 1...10_000)
        queue.ackWait = try settings.duration(ackWait, "ATTACHE_ACK_WAIT", option: "--ack-wait", default: queue.ackWait)
        queue.maxDeliver = try settings.int(maxDeliver, "ATTACHE_MAX_DELIVER", option: "--max-deliver", default: queue.maxDeliver, in: 1...1000)
        let probePort = try metrics.port(settings)
        let probeHost = host.host(settings)

        var options = try enrich.options(settings, storage: storage)
        options.cache = try cache.configuration(settings)
        options.media.conversionWait = try conversions.wait(settings)
        return Setup(queue: queue, options: options, logFormat: logFormat, probe: probePort.map { (probeHost, $0) },
                     tenantsFile: tenants.path(settings))
    }

    func run() async throws {
        try await reportingFailure("worker") { try await work() }
    }

    private func work() async throws {
        let setup = try await setUp()
        let observed = try bootstrapProcess(logFormat: setup.logFormat)
        let registry = observed.registry
        let logger = Logger(label: "attache.worker")
        let queue = setup.queue
        if setup.options.runtime.budget > queue.longestBudget {
            logger.warning("--deadline is cut to what --ack-wait leaves for the publish", metadata: [
                "attache.deadline_s": "\(setup.options.runtime.budget.seconds)", "attache.longest_s": "\(queue.longestBudget.seconds)",
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
