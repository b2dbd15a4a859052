import Attache
import AttacheFetch
import AttacheMedia
import AttachePayload
import AttacheStore
import AttacheSupport
import Logging
import Synchronization

extension MediaEnricher {
    public struct Configuration: Sendable {
        /// Where media is found in a payload (the generic keys) and how many attachments it gets.
        public var dialects: DialectReader
        /// What is made of each media: thumbnail and display sizes, conversions.
        public var render: RenderOptions
        public var limits: MediaLimits
        public var posterMode: PosterMode
        /// How long a payload whose movie or sound was still being converted at its deadline
        /// waits for the conversion (see `Enrichment.awaitingConversions`), which meanwhile goes
        /// on as the cache's work and has as long past its work's deadline to store what it made;
        /// nil: no payload waits, the work's deadline holds. Batch and worker wait, the service
        /// and relay not.
        public var conversionWait: Duration?
        /// An FCM send request's Android image is replaced by a validated copy (a JPEG within 1 MB,
        /// at most 1350 px), whether or not its APNs part is mutable; false: it goes as it came.
        public var androidCopies: Bool

        public init(dialects: DialectReader = DialectReader(), render: RenderOptions = RenderOptions(),
                    limits: MediaLimits = MediaLimits(), posterMode: PosterMode = .fast, conversionWait: Duration? = nil,
                    androidCopies: Bool = true) {
            self.dialects = dialects
            self.render = render
            self.limits = limits
            self.posterMode = posterMode
            self.conversionWait = conversionWait
            self.androidCopies = androidCopies
        }
    }
}

/// What every payload's enricher shares: the fetch engine, the store, the decoders.
public final class MediaServices: Sendable {
    public let engine: FetchEngine
    public let store: any MediaStore
    /// Threads for blocking work of this process (reading a spilled body).
    public let pool: BlockingPool
    /// Where downloaded bytes are parsed: this process's threads, or sandboxed helpers.
    public let decoder: any MediaDecoder
    public let configuration: MediaEnricher.Configuration
    /// Rewrite the dialect's own URL field to the validated copy (with a public base URL, so an
    /// unchanged device SDK fetches the checked file).
    public let rewriteSourceURLs: Bool
    /// Results by media URL and render options, shared by every payload (nil: no cache).
    public let cache: MediaCache?
    /// Media decoded, rendered and stored at once, process-wide: bounds the pixels and renditions
    /// held in memory. Taken after the download, never while waiting on an origin: a slow origin
    /// must not hold the slots that other origins' media need (per-origin fairness is the fetch
    /// engine's, and would not survive a shared slot held through downloads).
    let mediaJobs: AsyncSemaphore

    /// `decoder` defaults to decoding on `pool`, in this process.
    public init(engine: FetchEngine, store: any MediaStore, configuration: MediaEnricher.Configuration, rewriteSourceURLs: Bool = false,
                cache: MediaCache? = nil, maxMediaJobs: Int = 32, pool: BlockingPool = .shared, decoder: (any MediaDecoder)? = nil) {
        self.engine = engine
        self.store = store
        self.cache = cache
        self.mediaJobs = AsyncSemaphore(maxMediaJobs)
        self.pool = pool
        self.decoder = decoder ?? InProcessDecoder(pool: pool)
        self.configuration = configuration
        self.rewriteSourceURLs = rewriteSourceURLs
    }

    /// A fresh enricher for one payload (iOS, too, makes an extension instance per notification).
    /// `androidCopy`: each image also gets an Android copy (an FCM send request's).
    /// `observer` is told each attachment's report whenever it changes (a stage measured, an
    /// outcome reached): what the lab streams to its page while the payload is still in flight.
    /// `scope`: whose payload it is (a tenant's store, hosts, caps and cache namespace).
    public func makeExtension(androidCopy: Bool = false, observer: ReportObserver? = nil, scope: EnrichmentScope = .unscoped) -> MediaEnricher {
        MediaEnricher(services: self, androidCopy: androidCopy, observer: observer, scope: scope)
    }
}

/// Told an attachment's report each time it changes; called from the enrichment's tasks, so it
/// must return quickly.
public typealias ReportObserver = @Sendable (_ index: Int, _ report: AttachmentReport) -> Void

/// The default extension: finds media in every dialect, fetches, validates, renders, stores and
/// attaches it.
public final class MediaEnricher: AsyncNotificationServiceExtension {
    private struct State {
        var request: NotificationRequest?
        var mediaRequests: [MediaRequest] = []
        var reports: [AttachmentReport] = []
        var entries: [Int: AttachmentEntry] = [:]
        /// Set when `begin` found media to fetch.
        var uncached: [Int]?
    }

    private let services: MediaServices
    private let state = Mutex(State())
    /// One per attachment (at most the configured maximum), filled by the engine however a transfer ends.
    private let traces: [FetchTrace]

    private let androidCopy: Bool
    private let observer: ReportObserver?
    private let scope: EnrichmentScope
    /// The scope's store, else the services'.
    private let store: any MediaStore
    /// The scope's caps, else the configured ones.
    private let limits: MediaLimits

    init(services: MediaServices, androidCopy: Bool = false, observer: ReportObserver? = nil, scope: EnrichmentScope = .unscoped) {
        self.services = services
        self.androidCopy = androidCopy
        self.observer = observer
        self.scope = scope
        self.store = scope.store ?? services.store
        self.limits = scope.limits ?? services.configuration.limits
        self.traces = (0..<max(1, services.configuration.dialects.maxAttachments)).map { _ in FetchTrace() }
    }

    /// With every media of the payload already cached (or none to fetch), its result, attached
    /// here without a task, a race or a wait; else nil, and `didReceive` fetches the rest.
    public func resultAtOnce(_ request: NotificationRequest) -> ExtensionResult? {
        switch begin(request) {
        case .answered(let result): result
        case .waiting: nil
        }
    }

    public func didReceive(_ request: NotificationRequest) async -> ExtensionResult {
        let uncached: [Int]
        // Begun by `resultAtOnce` when the runtime asked it first: what it left to fetch.
        switch state.withLock({ $0.uncached }).map(Begun.waiting) ?? begin(request) {
        case .answered(let result): return result
        case .waiting(let left): uncached = left
        }
        let mediaRequests = state.withLock { $0.mediaRequests }
        // Most payloads name one media, attached in this task, with no child task to create and
        // wait for.
        if uncached.count == 1 {
            await attach(mediaRequests[uncached[0]], index: uncached[0], deadline: request.deadline)
        } else {
            await withTaskGroup(of: Void.self) { group in
                for index in uncached {
                    group.addTask { await self.attach(mediaRequests[index], index: index, deadline: request.deadline) }
                }
            }
        }
        return snapshot(final: true) ?? ExtensionResult(content: request.content, outcome: .fallback, reason: .timeout)
    }

    private enum Begun {
        /// Nothing to wait for.
        case answered(ExtensionResult)
        /// These media (by index) are not cached: fetched next.
        case waiting([Int])
    }

    /// What can be decided of the payload at once, its cached media attached.
    private func begin(_ request: NotificationRequest) -> Begun {
        let root = request.payload.root
        if services.configuration.dialects.repeatedKey(in: root) != nil {
            return .answered(ExtensionResult(content: request.content, outcome: .fallback, reason: .ambiguousPayload))
        }
        let mediaRequests = services.configuration.dialects.requests(in: root)
        guard !mediaRequests.isEmpty else {
            return .answered(ExtensionResult(content: request.content, outcome: .passthrough, reason: .noMedia))
        }
        // Said before any fetch: the runtime would refuse the attachments at the end anyway.
        guard !root.contains(request.attachmentsKey) else {
            return .answered(ExtensionResult(content: request.content, outcome: .fallback, reason: .keyConflict))
        }
        state.withLock { s in
            s.request = request
            s.mediaRequests = mediaRequests
            s.reports = mediaRequests.map { AttachmentReport(id: $0.id, source: $0.url) }
        }
        if let observer {
            for (index, media) in mediaRequests.enumerated() { observer(index, AttachmentReport(id: media.id, source: media.url)) }
        }
        // Media already cached is attached at once, without `attach`'s race.
        let uncached = mediaRequests.indices.filter { !attachCached(mediaRequests[$0], index: $0) }
        guard uncached.isEmpty else {
            state.withLock { $0.uncached = uncached }
            return .waiting(uncached)
        }
        return .answered(snapshot(final: true) ?? ExtensionResult(content: request.content, outcome: .fallback, reason: .timeout))
    }

    public func serviceExtensionTimeWillExpire() -> ExtensionResult? {
        snapshot(final: false)
    }

    /// The content with what is attached so far, and the outcome it amounts to.
    private func snapshot(final: Bool) -> ExtensionResult? {
        state.withLock { s in
            guard let request = s.request else { return nil }
            var content = request.content
            let attached = s.mediaRequests.indices.filter { s.entries[$0] != nil }
            content.attachments = attached.compactMap { s.entries[$0] }
            if services.rewriteSourceURLs {
                var root = JSONValue.object(content.userInfo)
                for i in attached {
                    let entry = s.entries[i]!
                    for location in s.mediaRequests[i].locations {
                        root.replace(at: location[...], with: .string(entry.url))
                    }
                    // The type field follows the URL to what it now names (a PNG's JPEG copy, a WebP's GIF).
                    if let field = s.mediaRequests[i].typeHint, let format = MediaFormat.allCases.first(where: { $0.uti == entry.type }) {
                        field.write(.init(kind: format.kind.rawValue, fileExtension: format.fileExtension, uti: format.uti, mime: format.mimeType),
                                    into: &root)
                    }
                }
                content.userInfo = root.objectValue ?? content.userInfo
            }
            if !attached.isEmpty, let airship = services.configuration.dialects.airshipContent(in: request.payload.root) {
                content.userInfo.setAlert(title: airship.title, subtitle: airship.subtitle, body: airship.body)
            }
            let firstFailure = s.reports.first { $0.outcome == .failed }?.reason
            let outcome: Outcome
            if !final { outcome = .fallback }
            else if attached.count == s.mediaRequests.count { outcome = .enriched }
            else if attached.isEmpty { outcome = .fallback }
            else { outcome = .partial }
            let reason: Reason? = final ? (outcome == .enriched ? nil : firstFailure) : .timeout
            return ExtensionResult(content: content, outcome: outcome, reason: reason, attachments: s.reports)
        }
    }

    /// Milliseconds since the payload arrived.
    private func since() -> Double {
        guard let received = state.withLock({ $0.request?.receivedAt }) else { return 0 }
        return received.duration(to: .now).milliseconds
    }

    /// Everything that changes what a URL renders to, and what its attachment's URLs start with:
    /// a record made under one base URL (or as `file://`, with none) is never answered under
    /// another, though both name the same stored files. (A cache group's members answer each
    /// other's results, under the store of whoever made them: theirs is keyed by the
    /// enrichment's own base.)
    private func cacheKey(_ media: MediaRequest) -> RenderKey {
        RenderKey(namespace: scope.cacheNamespace, url: media.url, render: renderOptions(media),
                  thumbnailTime: media.options.thumbnailTime, posterMode: services.configuration.posterMode,
                  limits: scope.limits == nil ? nil : limits,
                  urlBase: scope.sharesResultsAcrossStores ? services.store.urlBase : store.urlBase)
    }

    private func update(_ index: Int, _ change: (inout AttachmentReport) -> Void) {
        let report = state.withLock { s in
            change(&s.reports[index])
            return s.reports[index]
        }
        observer?(index, report)
    }

    /// Marks one attachment failed, and logs it (once: each attachment fails at most once).
    private func fail(_ index: Int, _ reason: Reason, _ message: String, detail: FailureDetail? = nil) {
        let now = since()
        let (logger, report) = state.withLock { ($0.request?.logger, $0.reports[index]) }
        logger?.info("attachment failed", metadata: [
            "attache.attachment.id": "\(report.id)", "attache.attachment.source": "\(report.source)",
            "attache.reason": "\(reason)", "attache.error": "\(message)",
        ])
        update(index) {
            $0.outcome = .failed
            $0.reason = reason
            $0.message = message
            $0.detail = detail
            // A transfer that did not finish still shows where its time went.
            let t = $0.timings
            if let start = t.fetchStart, t.dns + t.connect + t.tls + t.firstByte + t.download == 0, t.inspectStart == nil {
                if let traced = traces[index].timings, traced.total > 0 {
                    $0.timings.setFetch(traced)
                } else {
                    $0.timings.firstByte = max(0, now - start)
                }
            }
        }
    }

    /// Media not in the cache (or with no cache): fetched and made, or waited for, within the
    /// deadline.
    private func attach(_ media: MediaRequest, index: Int, deadline: ContinuousClock.Instant) async {
        let key = cacheKey(media), cache = services.cache
        // Set when this payload's own work starts converting (a payload waiting on another's work
        // asks the cache).
        let converting = Mutex(false)
        do {
            let entry: AttachmentEntry
            // A movie that is being converted offers its poster once the poster is stored; a payload
            // whose deadline comes first attaches that instead of nothing (the conversion goes on as
            // the cache's work, and the next payload gets the movie).
            let offered = Mutex<CachedMedia?>(nil)
            let cutoff = deadline - Self.posterMargin
            // Noted here, and in the cache for the payloads waiting on the same work.
            let offer: @Sendable (Interim) -> Void = { interim in
                switch interim {
                case .converting:
                    converting.withLock { $0 = true }
                    cache?.markConverting(key)
                case .poster(let poster):
                    offered.withLock { $0 = poster }
                    cache?.offer(poster, for: key)
                }
            }
            if let cache {
                let settled = try await settle(cutoff: cutoff, poster: { offered.withLock { $0 } ?? cache.provisional(for: key) }) {
                    try await cache.value(for: key) { workDeadline in
                        // Warm-through lengthens the payload's deadline, never shortens it.
                        try await self.make(media, index: index, key: key, deadline: max(workDeadline ?? deadline, deadline), offer: offer)
                    }
                }
                guard case .value(let cached, let event) = settled else {
                    entry = attachPoster(settled, media: media, index: index)
                    return finishAttached(index, entry)
                }
                return attach(cached, event, media: media, index: index)
            } else {
                let settled = try await settle(cutoff: cutoff, poster: { offered.withLock { $0 } }) {
                    let entry = try await self.fetchAndRender(media, index: index, deadline: deadline, offer: offer)
                    return (CachedMedia(entry: entry, kind: nil, format: nil, bytes: 0), .miss)
                }
                guard case .value(let made, _) = settled else {
                    entry = attachPoster(settled, media: media, index: index)
                    return finishAttached(index, entry)
                }
                entry = made.entry
            }
            finishAttached(index, entry)
        } catch {
            // One rule for "timed out": the work was cancelled, which happens only at the
            // deadline (whatever error the cancelled stage threw on its way out).
            let (reason, message) = Self.reason(for: error)
            if Task.isCancelled || error is CancellationError {
                fail(index, .timeout, "cancelled at the deadline")
                // Said so that a caller that waits for conversions (batch, worker) knows to.
                if converting.withLock({ $0 }) || cache?.isConverting(key) == true {
                    update(index) { $0.conversion = .pending(posterAttached: false) }
                }
            } else {
                fail(index, reason, message, detail: (error as? MediaError)?.detail.map { FailureDetail($0) })
            }
        }
    }

    /// Attaches the cache's result for `media` if it has one (true), with no race to run: the
    /// common case of a campaign, answered at once. A plain function, so that a payload whose
    /// media is cached never allocates the frame of `attach`, which holds a whole race's state.
    private func attachCached(_ media: MediaRequest, index: Int) -> Bool {
        guard let hit = services.cache?.hit(for: cacheKey(media)) else { return false }
        attach(hit, .hit, media: media, index: index)
        return true
    }

    /// The cache's result for `media` attached, and what the report says of it.
    private func attach(_ cached: CachedMedia, _ event: CacheEvent, media: MediaRequest, index: Int) {
        update(index) { r in
            r.cache = cached.fromStore && event == .miss ? .store : event
            if event != .miss || cached.fromStore {
                r.kind = cached.kind
                r.format = cached.format
                r.bytes = cached.bytes
                r.convertedFrom = cached.entry.convertedFrom
            }
        }
        finishAttached(index, cached.entry.with(id: media.id, options: media.options))
    }

    /// What a movie's work has to offer before it is done.
    enum Interim: Sendable {
        /// The conversion is starting.
        case converting
        /// The poster, stored: an attachment of its own.
        case poster(CachedMedia)
    }

    /// The cache's work for a key: the result another replica sharing the store recorded, or the
    /// media fetched, rendered and stored here (and recorded for the others).
    private func make(_ media: MediaRequest, index: Int, key: RenderKey, deadline: ContinuousClock.Instant,
                      offer: @escaping @Sendable (Interim) -> Void) async throws -> CachedMedia {
        let name = try SharedResults.name(for: key), store = self.store
        let timeToLive = services.cache?.configuration.timeToLive ?? .zero
        if let record = await store.record(named: name, deadline: deadline),
           let shared = SharedResults.decode(record, now: SharedResults.now(), timeToLive: timeToLive) {
            return shared
        }
        let entry = try await fetchAndRender(media, index: index, deadline: deadline, offer: offer)
        let report = state.withLock { $0.reports[index] }
        let made = CachedMedia(entry: entry, kind: report.kind, format: report.format, bytes: report.bytes ?? 0)
        // Best effort: without the record, other replicas only fetch again.
        try? await store.putRecord(SharedResults.encode(made, at: SharedResults.now()), named: name,
                                   deadline: storeDeadline(deadline, converted: report.conversion != nil))
        return made
    }

    /// The entry and the outcome together: a snapshot at the deadline sees both or neither.
    private func finishAttached(_ index: Int, _ entry: AttachmentEntry) {
        let report = state.withLock { s in
            s.entries[index] = entry
            s.reports[index].outcome = .attached
            s.reports[index].androidURL = entry.androidURL
            return s.reports[index]
        }
        observer?(index, report)
    }

    /// How long before the extension's deadline a payload stops waiting for a conversion and
    /// attaches the poster it offered.
    static let posterMargin = Duration.milliseconds(100)

    enum Settled: Sendable {
        case value(CachedMedia, CacheEvent)
        /// The work's offer, taken at the cutoff while the work goes on.
        case poster(CachedMedia)
    }

    /// The work's value; or, from `cutoff` on, what `poster` offers, if the work is not done.
    /// Without conversions nothing is ever offered: the work alone, without a race.
    private func settle(cutoff: ContinuousClock.Instant, poster: @escaping @Sendable () -> CachedMedia?,
                        _ work: @escaping @Sendable () async throws -> (CachedMedia, CacheEvent)) async throws -> Settled {
        guard services.configuration.render.transcode != nil else {
            let (value, event) = try await work()
            return .value(value, event)
        }
        return try await PosterRace.settle(cutoff: cutoff, poster: poster, work)
    }

    /// A movie's poster as the attachment, the conversion still running; the report says so.
    private func attachPoster(_ settled: Settled, media: MediaRequest, index: Int) -> AttachmentEntry {
        guard case .poster(let poster) = settled else { preconditionFailure("not a poster") }
        update(index) { r in
            r.conversion = .pending(posterAttached: true)
        }
        return poster.entry.with(id: media.id, options: media.options)
    }

    /// Each stage's error type has its reason.
    private static func reason(for error: any Error) -> (Reason, String) {
        switch error {
        case let error as FetchError: return (Reason(error), (error.rejection as? MediaError)?.message ?? error.message)
        case let error as MediaError: return (Reason(error.code), error.message)
        case let error as StoreError: return (.storeFailed, error.message)
        // Nothing else is thrown today; were something to be, the media is what could not be
        // made (and a crash is never the answer to one attachment).
        default: return (.invalidMedia, "\(error)")
        }
    }

    /// The deadline of the writes after a movie's or sound's work: with a conversion, at least
    /// `conversionWait` from now (the conversion may have outlasted the work's deadline, and what
    /// it made is what the payloads waiting for it came for).
    private func storeDeadline(_ deadline: ContinuousClock.Instant, converted: Bool) -> ContinuousClock.Instant {
        guard converted, let time = services.configuration.conversionWait else { return deadline }
        return max(deadline, .now + time)
    }

    /// `offer`: told when a movie's or sound's conversion starts, and a movie's poster, stored,
    /// before that.
    private func fetchAndRender(_ media: MediaRequest, index: Int, deadline: ContinuousClock.Instant,
                                offer: (@Sendable (Interim) -> Void)? = nil) async throws -> AttachmentEntry {
        let limits = self.limits
        let transcode = services.configuration.render.transcode
        // The media policy runs in the fetch engine on the first bytes; the format it sniffed
        // there is the one every later stage uses.
        let sniffed = SniffedFormat()
        var request = FetchRequest(url: media.url, maxBytes: limits.mostBytes(transcode: transcode),
                                   prefixLength: Sniffer.prefixLength) { prefix in
            do throws(MediaError) {
                let (format, maxBytes) = try limits.judge(prefix: prefix, transcode: transcode)
                sniffed.value.withLock { $0 = format }
                return .accept(maxBytes: maxBytes)
            } catch {
                return .reject(error)
            }
        }
        request.trace = traces[index]
        request.allowedHosts = scope.allowedHosts
        request.allowance = scope.downloadAllowance
        let fetchStart = since()
        update(index) { $0.timings.fetchStart = fetchStart }
        let logger = state.withLock { $0.request?.logger } ?? ExtensionRuntime.silent
        let fetched = try await services.engine.fetch(request, deadline: deadline, logger: logger)
        update(index) { r in
            r.httpStatus = fetched.status
            r.connectedIP = fetched.connectedIP
            r.redirects = fetched.redirects
            r.bytes = fetched.bytes
            r.timings.setFetch(fetched.timings)
        }

        // A body shorter than the prefix was judged whole by the engine; none at all never was.
        guard let format = sniffed.value.withLock({ $0 }) else { throw MediaError(.invalidMedia, "an empty body") }
        let (rendered, main, thumbnail, writes) = try await services.mediaJobs.withPermit {
            let rendered = format.kind == .image
                ? try await renderImage(fetched, format: format, media: media, index: index)
                : try await renderMovie(fetched, format: format, media: media, index: index, deadline: deadline, offer: offer)
            let writes = storeDeadline(deadline, converted: format.kind != .image && rendered.convertedFrom != nil)
            let (main, thumbnail) = try await store(rendered, index: index, deadline: writes)
            return (rendered, main, thumbnail, writes)
        }
        var thumbnailEntry: AttachmentEntry.Thumbnail?
        if let stored = thumbnail, let image = rendered.thumbnail {
            thumbnailEntry = .init(url: stored.url, width: image.width, height: image.height)
        }
        var android: StoredMedia?
        if let image = rendered.android {
            android = try await store.put(image.bytes, fileExtension: image.format.fileExtension, deadline: writes)
        }
        var gif: AttachmentEntry.Copy?
        if let image = rendered.gif {
            let stored = try await store.put(image.bytes, fileExtension: image.format.fileExtension, deadline: writes)
            gif = .init(url: stored.url, width: image.width, height: image.height, bytes: image.bytes.count)
        }
        var entry = AttachmentEntry(
            id: media.id, url: main.url, type: rendered.uti, bytes: rendered.main.count,
            width: rendered.width, height: rendered.height, frames: rendered.frames, duration: rendered.duration,
            thumbnail: thumbnailEntry, thumbhash: rendered.thumbhash, convertedFrom: rendered.convertedFrom,
            options: media.options
        )
        entry.androidURL = android?.url
        entry.gif = gif
        return entry
    }

    /// The main rendition, then the thumbnail (not at once: a main that cannot be stored must not
    /// leave a thumbnail behind); the URLs are only used once both writes are confirmed.
    private func store(_ rendered: Rendered, index: Int, deadline: ContinuousClock.Instant) async throws -> (StoredMedia, StoredMedia?) {
        let storeStart = ContinuousClock.now
        let storeOffset = since()
        let store = self.store
        let ext = rendered.format.fileExtension
        // What is stored is hashed here (a body stored as it came only now, never while it
        // downloaded), off the cooperative pool.
        let sha256 = try await services.pool.run { _ in try SHA256Hasher.hex(rendered.main) }
        let main = try await store.put(rendered.main, fileExtension: ext, sha256: sha256, file: rendered.original?.path, deadline: deadline)
        var thumbnail: StoredMedia?
        if let image = rendered.thumbnail {
            thumbnail = try await store.put(image.bytes, fileExtension: image.format.fileExtension, deadline: deadline)
        }
        let stored = (main, thumbnail)
        update(index) {
            $0.timings.storeStart = storeOffset
            $0.timings.store = storeStart.duration(to: .now).milliseconds
        }
        return stored
    }

    /// What goes into the store and the attachment entry.
    private struct Rendered: Sendable {
        var main: [UInt8]
        /// Set when `main` is the downloaded body as it came: its hash is known, and it may be in
        /// a file already.
        var original: FetchedBody?
        var format: MediaFormat
        var uti: String
        var width: Int?
        var height: Int?
        var frames: Int?
        var duration: Double?
        var thumbnail: RenderedImage?
        var thumbhash: String?
        var convertedFrom: MediaFormat?
        var android: RenderedImage?
        var gif: RenderedImage?
    }

    /// The body where it is (its file mapped when it spilled: decoded in place, or handed to a
    /// helper by descriptor), and the report's kind and format, as sniffed, before any decoding.
    private func load(_ fetched: FetchResult, format: MediaFormat, index: Int) async throws -> MappedBytes {
        update(index) { r in
            r.kind = format.kind
            r.format = format
        }
        return try await services.pool.run { _ in try fetched.body.body }
    }

    /// The body as an array, when it is stored as it came (the stores take its file when they
    /// can, but fall back to the bytes); a spilled body is read from its file for it.
    private func original(_ bytes: MappedBytes) async throws -> [UInt8] {
        guard case .file = bytes else { return bytes.array }
        return try await services.pool.run { _ in bytes.array }
    }

    /// The configured renditions, with this media's clipping rect, converting to within the
    /// scope's caps: the one place a scope's limits meet the render options, for the movie and the
    /// animation pipelines alike and for the poster-first decision below.
    private func renderOptions(_ media: MediaRequest) -> RenderOptions {
        var options = services.configuration.render
        options.clip = media.options.clippingRect
        options.transcode = options.transcode?.within(limits)
        if androidCopy { options.androidSize = RenderOptions.androidEdge }
        return options
    }

    private func renderImage(_ fetched: FetchResult, format: MediaFormat, media: MediaRequest, index: Int) async throws -> Rendered {
        let bytes = try await load(fetched, format: format, index: index)
        let start = ContinuousClock.now
        let offset = since()
        let (rendition, inspectMs, renderMs) = try await services.decoder.image(bytes, format: format, options: renderOptions(media),
                                                                               limits: limits)
        let header = rendition.header
        // Inspect is the decoder's own measure; render is the rest of the job as waited for
        // (with isolation, the trip to the helper and back too).
        let total = start.duration(to: .now).milliseconds
        update(index) { r in
            r.timings.inspectStart = offset
            r.timings.inspect = inspectMs
            r.timings.renderStart = offset + inspectMs
            r.timings.render = max(renderMs, total - inspectMs)
            r.convertedFrom = rendition.convertedFrom
        }
        if let display = rendition.display {
            return Rendered(main: display.bytes, format: display.format, uti: display.format.uti, width: display.width,
                            height: display.height, frames: display.frames > 1 ? display.frames : nil, thumbnail: rendition.thumbnail,
                            thumbhash: rendition.thumbhash, convertedFrom: rendition.convertedFrom, android: rendition.android,
                            gif: rendition.gif)
        }
        return Rendered(main: try await original(bytes), original: fetched.body, format: header.format, uti: header.format.uti, width: header.displayWidth,
                        height: header.displayHeight, frames: header.frames > 1 ? header.frames : nil,
                        thumbnail: rendition.thumbnail, thumbhash: rendition.thumbhash, android: rendition.android)
    }

    private func renderMovie(_ fetched: FetchResult, format: MediaFormat, media: MediaRequest, index: Int,
                             deadline: ContinuousClock.Instant, offer: (@Sendable (Interim) -> Void)?) async throws -> Rendered {
        let bytes = try await load(fetched, format: format, index: index)
        let start = ContinuousClock.now
        let offset = since()
        let configuration = services.configuration
        let options = renderOptions(media)
        func render(_ options: RenderOptions) async throws -> MovieRendition {
            try await services.decoder.movie(bytes, format: format, options: options, time: media.options.thumbnailTime,
                                             posterMode: configuration.posterMode, limits: limits)
        }
        var movie: MovieRendition
        if let settings = options.transcode, let offer {
            // The poster first, stored and offered, then the conversion as a job of its own (the
            // second job opens the file again: milliseconds, against the conversion's seconds).
            var first = options
            first.convertsNow = false
            movie = try await render(first)
            if TranscodePlanner.converts(movie.facts, size: bytes.count, settings: settings) {
                if let poster = movie.thumbnail { try await offerPoster(poster, media: media, deadline: deadline, offer) }
                offer(.converting)
                movie = try await render(options)
            }
        } else {
            movie = try await render(options)
        }
        let facts = movie.facts
        let total = start.duration(to: .now).milliseconds
        update(index) { r in
            r.kind = facts.kind
            r.timings.renderStart = offset
            r.timings.render = total
            if let converted = movie.converted {
                // The conversion's own measure; the probe and poster are the rest.
                r.timings.render = max(0, total - converted.milliseconds)
                r.timings.transcodeStart = offset + r.timings.render
                r.timings.transcode = converted.milliseconds
                r.convertedFrom = facts.format
                r.conversion = .made(converted.json)
            }
        }
        if let converted = movie.converted {
            return Rendered(main: converted.bytes, format: converted.format, uti: converted.uti, width: converted.width,
                            height: converted.height, duration: converted.duration, thumbnail: movie.thumbnail, convertedFrom: facts.format)
        }
        return Rendered(main: try await original(bytes), original: fetched.body, format: facts.format, uti: facts.uti,
                        width: facts.hasVideo ? facts.width : nil, height: facts.hasVideo ? facts.height : nil,
                        duration: facts.duration > 0 ? facts.duration : nil, thumbnail: movie.thumbnail)
    }

    /// The poster as an attachment of its own (a JPEG, its own thumbnail), stored, and offered.
    private func offerPoster(_ poster: RenderedImage, media: MediaRequest, deadline: ContinuousClock.Instant,
                             _ offer: @Sendable (Interim) -> Void) async throws {
        let stored = try await store.put(poster.bytes, fileExtension: poster.format.fileExtension, deadline: deadline)
        let entry = AttachmentEntry(id: media.id, url: stored.url, type: poster.format.uti, bytes: poster.bytes.count,
                                    width: poster.width, height: poster.height,
                                    thumbnail: .init(url: stored.url, width: poster.width, height: poster.height), options: media.options)
        offer(.poster(CachedMedia(entry: entry, kind: .image, format: poster.format, bytes: poster.bytes.count)))
    }
}

/// The format the media policy sniffed in the fetch engine, for the stages after it.
private final class SniffedFormat: Sendable {
    let value = Mutex<MediaFormat?>(nil)
}
