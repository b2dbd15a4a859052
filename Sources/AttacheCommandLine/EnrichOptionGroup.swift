import ArgumentParser
import Attache
import AttacheEnrichment
import AttacheFetch
import AttacheIsolation
import AttacheMedia
import AttachePayload
import AttacheStore
import AttacheSupport

/// The defaults the options' help names: the configuration's own, made once (the help strings are
/// built each time an option group is parsed).
private let standardOptions = Enrichment.Configuration()

/// The options every command that enriches shares (`enrich`, `batch`, `timeline`, the service,
/// the worker, the relay and the lab), each also read from an `ATTACHE_*` variable when the flag
/// is not given. Where the results are stored is `StorageOptionGroup`'s.
public struct EnrichOptionGroup: ParsableArguments {
    @Option(help: "Deadline for each payload: 300ms, 2s, 1.5s [ATTACHE_DEADLINE; default \(DurationText.format(DeadlinePolicy.standardDefault)), \(DurationText.format(DeadlinePolicy.service.default)) for serve, relay and lab].", transform: parseDuration)
    var deadline: Duration?

    @Option(help: "Longest deadline a payload's Attache-Deadline-Ms header may ask of the service or the worker [ATTACHE_MAX_DEADLINE, default \(DurationText.format(standardOptions.maxBudget))].", transform: parseDuration)
    var maxDeadline: Duration?

    @Option(help: "What to emit when the deadline passes: original or best-attempt [ATTACHE_ON_TIMEOUT, default \(standardOptions.runtime.onTimeout.rawValue)].")
    var onTimeout: TimeoutPolicy?

    @Option(help: "Allow connections to this network (CIDR); repeatable. Nothing private or loopback is allowed by default [ATTACHE_ALLOW_ADDRESSES, comma-separated, added to the flags].", transform: parseCIDR)
    var allowAddress: [CIDR] = []

    @Option(help: "HTTP proxy for media fetches [ATTACHE_PROXY]; proxy environment variables are ignored. Through a proxy the address policy cannot see where a request goes: targets named by a private address literal are refused, names are resolved by the proxy, which must enforce its own rules.")
    var proxy: String?

    @Option(help: "Longest edge of thumbnails, in pixels [ATTACHE_THUMBNAIL_SIZE, default \(standardOptions.media.render.thumbnailSize)].")
    var thumbnailSize: Int?

    @Option(help: "Longest edge of display copies, made only for larger sources [ATTACHE_DISPLAY_SIZE, default \(standardOptions.media.render.displaySize)].")
    var displaySize: Int?

    @Option(help: "APNs payload budget in bytes, 5120 for VoIP [ATTACHE_MAX_PAYLOAD_BYTES, default \(standardOptions.runtime.maxPayloadBytes)].")
    var maxPayloadBytes: Int?

    @Option(help: "Key the attachments array is added under [ATTACHE_ATTACHMENTS_KEY, default \(standardOptions.runtime.attachmentsKey)].")
    var attachmentsKey: String?

    @Option(help: "Most attachments per payload [ATTACHE_MAX_ATTACHMENTS, default \(standardOptions.media.dialects.maxAttachments)].")
    var maxAttachments: Int?

    @Option(name: .customLong("media-key"), help: "A key read as a generic media URL, after the default ones: a top-level name, or a JSON Pointer (/data/image/0/url) for a nested one; KEY=TYPEKEY also names the field that tells its SDK the media's type, rewritten with the URL; repeatable [ATTACHE_MEDIA_KEYS].")
    var mediaKeys: [String] = []

    @Flag(name: .customLong("no-default-media-keys"), help: "Read only the --media-key keys, not the default generic ones (imageUrl, image_url, image-url, mediaUrl, media_url, media-url, attachmentUrl, attachment-url) [ATTACHE_NO_DEFAULT_MEDIA_KEYS].")
    var noDefaultMediaKeys = false

    @Flag(name: .customLong("no-android-copy"), help: "Send an FCM request's Android image (android.notification.image, else notification.image) as it came, instead of a validated copy within FCM's 1 MB and 1350 px, made whether or not the APNs part is mutable [ATTACHE_NO_ANDROID_COPY].")
    var noAndroidCopy = false

    @Option(help: "Movie poster frames: fast (keyframe at or before the thumbnail time) or exact (first frame at or after it) [ATTACHE_POSTER, default \(standardOptions.media.posterMode.rawValue)].")
    var poster: PosterMode?

    @OptionGroup var transcode: TranscodeOptionGroup

    @Option(help: "Media decoded, rendered and stored at once; bounds memory [ATTACHE_MAX_MEDIA_JOBS, default \(standardOptions.maxMediaJobs)].")
    var maxMediaJobs: Int?

    @Option(help: "Where downloaded media is decoded: process (sandboxed attache-decode helpers, found beside this executable: a crash or a bomb costs one attachment) or in-process [ATTACHE_ISOLATION; default process for serve, worker, relay, lab and batch, in-process for enrich and timeline].")
    var isolation: Isolation?

    @Option(help: "Decoder helpers kept running with --isolation process, each decoding one file at a time [ATTACHE_DECODERS, default one per core, two at least]. Movies and big animations run on all but one of them: the last is kept for images.")
    var decoders: Int?

    public init() {}

    /// The options, flags first, then `settings`; `storage` is where the results go (nil: the
    /// command keeps its own store, as the lab does); `defaultBudget` and `defaultIsolation`
    /// are the command's own.
    public func options(_ settings: Settings = Settings(), storage: StorageOptionGroup?, defaultBudget: Duration = DeadlinePolicy.standardDefault,
                        defaultIsolation: Isolation = .process) throws -> Enrichment.Configuration {
        var options = Enrichment.Configuration()
        options.maxBudget = try settings.duration(maxDeadline, "ATTACHE_MAX_DEADLINE", option: "--max-deadline", default: options.maxBudget)
        options.runtime = try runtime(settings, defaultBudget: min(defaultBudget, options.maxBudget), maxBudget: options.maxBudget)
        if let storage { options.storage = try storage.configuration(settings) }
        options.fetch.policy.allowed = try settings.cidrs(allowAddress, "ATTACHE_ALLOW_ADDRESSES")
        options.fetch.proxy = settings.string(proxy, "ATTACHE_PROXY")
        options.media = try media(settings)
        options.maxMediaJobs = try settings.int(maxMediaJobs, "ATTACHE_MAX_MEDIA_JOBS", option: "--max-media-jobs",
                                                default: options.maxMediaJobs, in: 1...1024)
        options.isolation = try settings.choice(isolation, "ATTACHE_ISOLATION", default: defaultIsolation)
        options.decoders.helpers = try settings.int(decoders, "ATTACHE_DECODERS", option: "--decoders",
                                                    default: options.decoders.helpers, in: 1...256)
        return options
    }

    /// The runtime's part: the default budget (a command's own, lowered to the maximum unless
    /// asked for), what is emitted at the deadline, the attachments key, the payload budget.
    private func runtime(_ settings: Settings, defaultBudget: Duration, maxBudget: Duration) throws -> ExtensionRuntime.Configuration {
        var runtime = standardOptions.runtime
        // A deadline asked for above the maximum is refused (a header asking as much would be
        // capped: the two would disagree); a command's own default gives way to a lower maximum.
        let deadlineGiven = deadline != nil || settings.source.value(of: "ATTACHE_DEADLINE") != nil
        runtime.budget = try settings.duration(deadline, "ATTACHE_DEADLINE", option: "--deadline", default: defaultBudget)
        if deadlineGiven, runtime.budget > maxBudget {
            throw ValidationError("\(deadline != nil ? "--deadline" : "ATTACHE_DEADLINE") \(DurationText.format(runtime.budget)) is above "
                + "the longest deadline, \(DurationText.format(maxBudget)) (\(self.maxDeadline != nil ? "--max-deadline" : "ATTACHE_MAX_DEADLINE, default 30s")): "
                + "lower it or raise --max-deadline")
        }
        runtime.onTimeout = try settings.choice(onTimeout, "ATTACHE_ON_TIMEOUT", default: runtime.onTimeout)
        runtime.maxPayloadBytes = try settings.int(maxPayloadBytes, "ATTACHE_MAX_PAYLOAD_BYTES", option: "--max-payload-bytes",
                                                   default: runtime.maxPayloadBytes, in: 256...65536)
        runtime.attachmentsKey = settings.string(attachmentsKey, "ATTACHE_ATTACHMENTS_KEY", default: runtime.attachmentsKey)
        return runtime
    }

    /// The media part: sizes, the keys media is read from, posters, conversions.
    private func media(_ settings: Settings) throws -> MediaEnricher.Configuration {
        var media = standardOptions.media
        media.render.thumbnailSize = try settings.int(thumbnailSize, "ATTACHE_THUMBNAIL_SIZE", option: "--thumbnail-size",
                                                      default: media.render.thumbnailSize, in: 16...4096)
        media.render.displaySize = try settings.int(displaySize, "ATTACHE_DISPLAY_SIZE", option: "--display-size",
                                                    default: media.render.displaySize, in: media.render.thumbnailSize...8192)
        media.dialects.maxAttachments = try settings.int(maxAttachments, "ATTACHE_MAX_ATTACHMENTS", option: "--max-attachments",
                                                         default: media.dialects.maxAttachments, in: 1...16)
        let keys = settings.list(mediaKeys, "ATTACHE_MEDIA_KEYS")
        let defaults = try settings.flag(noDefaultMediaKeys, "ATTACHE_NO_DEFAULT_MEDIA_KEYS") ? [] : media.dialects.genericKeys
        media.dialects.genericKeys = defaults + keys.filter { !defaults.contains($0) }
        if let bad = DialectReader.namedKeys(in: media.dialects.genericKeys).first(where: { $0.hasPrefix("/") && JSONPointer($0) == nil }) {
            throw ValidationError("--media-key \"\(bad)\" is not a JSON Pointer (RFC 6901: /a/b/0, with ~0 for ~ and ~1 for /)")
        }
        media.androidCopies = try !settings.flag(noAndroidCopy, "ATTACHE_NO_ANDROID_COPY")
        media.posterMode = try settings.choice(poster, "ATTACHE_POSTER", default: media.posterMode)
        media.render.transcode = try transcode.settings(settings)
        return media
    }
}

/// Where a command's results are stored and under which URL devices read them: every command that
/// enriches but the lab, which keeps its own store.
public struct StorageOptionGroup: ParsableArguments {
    @Option(help: "Where validated media and thumbnails are stored: a directory, or s3://BUCKET/PREFIX (credentials, region and endpoint from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION, AWS_ENDPOINT_URL_S3) [ATTACHE_STORE, default the media directory].")
    var store: String?

    @Option(help: "The store's directory (--store DIR), and with an s3:// store where downloads wait [ATTACHE_MEDIA_DIR, default \(standardOptions.storage.directory)].")
    var mediaDir: String?

    @Option(help: "Base URL the media directory is served under; URLs become BASE/<hash>.<ext> and the dialect's own URL field is rewritten [ATTACHE_PUBLIC_BASE_URL].")
    var publicBaseURL: String?

    public init() {}

    func configuration(_ settings: Settings) throws -> StoreConfiguration {
        var storage = standardOptions.storage
        storage.directory = settings.string(mediaDir, "ATTACHE_MEDIA_DIR", default: storage.directory)
        if let text = settings.string(store, "ATTACHE_STORE") {
            let parsed: (StoreLocation, directory: String?)
            do {
                // The standard AWS variables, read here and noted like every other setting.
                parsed = try StoreLocation.parse(text) { variable in
                    let value = settings.source.value(of: variable)
                    settings.noteRead(variable, value)
                    return value
                }
            } catch {
                throw ValidationError("--store \(text): \(error)")
            }
            storage.location = parsed.0
            if let directory = parsed.directory {
                guard mediaDir == nil else { throw ValidationError("--store DIR and --media-dir name the same thing: give one") }
                storage.directory = directory
            }
        }
        storage.publicBaseURL = settings.string(publicBaseURL, "ATTACHE_PUBLIC_BASE_URL")
        return storage
    }
}
