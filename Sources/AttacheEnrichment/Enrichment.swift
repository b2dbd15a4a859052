import Attache
import AttacheFetch
import AttacheIsolation
import AttacheMedia
import AttachePayload
import AttacheStore
import AttacheSupport
import Logging

extension Enrichment {
    /// What every front door that enriches configures: a tree of the parts' own configurations,
    /// each read by the command line's option group for it (`EnrichOptionGroup`,
    /// `StorageOptionGroup`, `CacheOptionGroup`, `TranscodeOptionGroup`). Live objects (a
    /// decoder of the caller's, tenants) are passed beside it, never inside.
    public struct Configuration: Sendable {
        /// The runtime's: the deadline policy (a payload's budget when it names none, the longest
        /// its `Attache-Deadline-Ms` may ask of the service, the worker or the relay, what is
        /// emitted when it passes), the attachments key, the payload budget in bytes.
        public var runtime = ExtensionRuntime.Configuration()
        /// Where results go and under which URL.
        public var storage = StoreConfiguration()
        /// How media is fetched: the address policy, a proxy, the transport's limits. Its temp
        /// directory is the enrichment's scratch space, whatever is set here.
        public var fetch = FetchEngine.Configuration()
        /// What is read from a payload, what is made of its media, and how long a payload waits
        /// for its conversions. Movies and sounds a device would not play are converted.
        public var media = MediaEnricher.Configuration(render: RenderOptions(transcode: TranscodeSettings()))
        /// A result cache shared by every payload this enrichment handles (nil: none).
        public var cache: MediaCache.Configuration?
        /// Media fetched and rendered at once (bounds the memory bodies take while waiting to decode).
        public var maxMediaJobs = 32
        /// Where downloaded media is parsed: in sandboxed helper processes, or in this one.
        public var isolation: Isolation = .inProcess
        /// The helpers, with `.process`.
        public var decoders = DecoderPool.Configuration()

        public init() {}
    }
}

/// The runtime plus the shared media services, built from options: what a command runs.
public struct Enrichment: Sendable {
    public let runtime: ExtensionRuntime
    public let services: MediaServices
    /// This process's temp files (fetched bodies, store writes), removed by `shutdown()`.
    public let scratch: ScratchSpace
    /// An object store's own fetch engine (store traffic is not media traffic).
    let storeEngine: FetchEngine?
    /// The sandboxed decoders, with `.process` isolation.
    public let decoderPool: DecoderPool?
    /// Where the store is and what its URLs start with: what a scope's store is made from, and
    /// what the service serves under `/media` and asks for readiness.
    public let storage: StoreConfiguration
    /// How the front doors that take a deadline per payload turn it into a budget: the runtime's.
    public var deadlinePolicy: DeadlinePolicy { runtime.configuration.deadlinePolicy }
    private let conversionWait: Duration?

    /// Throws when the store cannot be used, or (`IsolationError`) when isolation was asked for
    /// and a sandboxed decoder cannot be started. `decoder`: one of the caller's own, in place of
    /// the one `isolation` names.
    public init(configuration options: Enrichment.Configuration, logger: Logger = Logger(label: "attache"),
                decoder: (any MediaDecoder)? = nil) throws {
        // First: a helper that cannot sandbox itself stops the command before anything is made;
        // and the helpers do not outlive an enrichment that could not be made after all.
        let pool = options.isolation == .process && decoder == nil ? try DecoderPool(configuration: options.decoders, logger: logger) : nil
        decoderPool = pool
        storage = options.storage
        conversionWait = options.media.conversionWait
        do {
            scratch = try ScratchSpace(in: options.storage.directory)  // makes the media directory too
            let store: any MediaStore
            switch options.storage.location {
            case .bucket(let location, let endpoint):
                let engine = try S3Store.makeEngine(tempDirectory: scratch.path)
                storeEngine = engine
                store = S3Store(location: location, endpoint: endpoint, publicBaseURL: options.storage.publicBaseURL, engine: engine)
            case .directory:
                storeEngine = nil
                store = try FileStore(directory: options.storage.directory, publicBaseURL: options.storage.publicBaseURL, tempDirectory: scratch.path)
            }
            var fetch = options.fetch
            fetch.tempDirectory = scratch.path
            let engine = try FetchEngine(configuration: fetch, logger: logger)
            services = MediaServices(engine: engine, store: store, configuration: options.media,
                                     rewriteSourceURLs: options.storage.publicBaseURL != nil,
                                     cache: options.cache.map(MediaCache.init),
                                     maxMediaJobs: options.maxMediaJobs, decoder: decoder ?? decoderPool)
        } catch {
            pool?.shutdown()
            throw error
        }
        runtime = ExtensionRuntime(configuration: options.runtime)
    }

    /// Enriches one payload with the default media extension, under the configured budget or the
    /// one given.
    /// `logger` carries the caller's request metadata; each attachment that fails is logged there.
    /// `observer` is told each attachment's report as it changes (see `ReportObserver`).
    /// `scope`: whose payload it is (a tenant's store, hosts, caps and cache namespace).
    public func enrich(_ bytes: [UInt8], identifier: String = "payload", budget: Duration? = nil,
                       logger: Logger = ExtensionRuntime.silent, observer: ReportObserver? = nil,
                       scope: EnrichmentScope = .unscoped) async throws(PayloadError) -> Emission {
        let services = self.services
        var runtime = self.runtime
        if let budget { runtime.configuration.deadlinePolicy.default = budget }
        if let fcm = try await enrichFCMRequest(bytes, identifier: identifier, runtime: runtime, logger: logger, observer: observer, scope: scope) {
            return fcm
        }
        return try await runtime.process(bytes, identifier: identifier, logger: logger) { services.makeExtension(observer: observer, scope: scope) }
    }

    /// `enrich` as far as it goes without waiting, on the calling thread, with no task: the answer
    /// when every media the payload names is already in the cache (or it names none, or the
    /// runtime answers it itself) — what a door on an event loop answers a campaign's repeated
    /// media with — else its fetches under way, to be awaited from a task (`Waiting.emission()`).
    /// Nil for an FCM send request (whose parts are enriched apart): `enrich` it.
    public func start(_ bytes: [UInt8], identifier: String = "payload", budget: Duration? = nil,
                      logger: Logger = ExtensionRuntime.silent, scope: EnrichmentScope = .unscoped) throws(PayloadError) -> ExtensionRuntime.Start? {
        guard !FCMSendRequest.mightBe(bytes) else { return nil }
        var runtime = self.runtime
        if let budget { runtime.configuration.deadlinePolicy.default = budget }
        return try runtime.start(bytes, identifier: identifier, logger: logger) { services.makeExtension(scope: scope) }
    }

    /// `first`, or better: when some of its movies or sounds were still being converted at its
    /// deadline (a poster attached instead, or nothing), the payload is enriched again with
    /// `conversionWait` as its deadline — joining the conversions, which went on as the cache's
    /// work, or finding what they made — and that answer is taken when it has attached at least
    /// as much and waits for nothing. Cancelled (a worker stopping), it ends with `first`.
    public func awaitingConversions(_ first: Emission, bytes: [UInt8], identifier: String = "payload",
                                    logger: Logger = ExtensionRuntime.silent, scope: EnrichmentScope = .unscoped) async -> Emission {
        guard let wait = conversionWait, wait > .zero, first.report.attachments.contains(where: \.conversionPending),
              !Task.isCancelled,
              let again = try? await enrich(bytes, identifier: identifier, budget: wait, logger: logger, scope: scope),
              !again.report.attachments.contains(where: \.conversionPending),
              again.report.attachments.count(where: { $0.outcome == .attached }) >= first.report.attachments.count(where: { $0.outcome == .attached })
        else { return first }
        var answer = again
        answer.report.elapsedMs += first.report.elapsedMs
        answer.report.deadlineMs = first.report.deadlineMs
        return answer
    }

    /// A store beside the enrichment's own, under `prefix` (`acme/`: a sub-directory of the media
    /// directory, or more of the bucket's key), sharing its connections and scratch space. Its
    /// URLs are `publicBaseURL` (else the enrichment's) followed by the prefix and the name, as the
    /// enrichment's own are the base followed by the name.
    public func store(prefix: String, publicBaseURL: String? = nil) throws -> any MediaStore {
        let base = publicBaseURL ?? storage.publicBaseURL
        switch storage.location {
        case .bucket(var location, let endpoint):
            location.prefix += prefix
            // S3Store's URLs carry the whole key (its prefix included) after the base.
            return S3Store(location: location, endpoint: endpoint, publicBaseURL: base, engine: storeEngine!)
        case .directory:
            let path = prefix.withoutTrailingSlash
            return try FileStore(directory: "\(storage.directory.withoutTrailingSlash)/\(path)",
                                 publicBaseURL: base.map { "\($0.withoutTrailingSlash)/\(path)" }, tempDirectory: scratch.path)
        }
    }

    /// The original payload, answered at once with a reason (for example `overloaded`).
    public func passOn(_ bytes: [UInt8], reason: Reason) throws(PayloadError) -> Emission {
        try runtime.passOn(bytes, reason: reason)
    }

    /// Stops the fetch engine and removes this process's temp files, however many bodies are
    /// still referenced (an abandoned decode's, say).
    public func shutdown() {
        decoderPool?.shutdown()
        services.engine.shutdown()
        storeEngine?.shutdown()
        scratch.removeAll()
    }

    /// The same, suspending while the engine stops (what a service group's member does).
    public func shutdownGracefully() async {
        decoderPool?.shutdown()
        await services.engine.shutdownGracefully()
        await storeEngine?.shutdownGracefully()
        scratch.removeAll()
    }
}
