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
let standardOptions = Enrichment.Configuration()

/// The flags every command that enriches shares (`enrich`, `batch`, `timeline`, the service,
/// the worker, the relay and the lab). What they mean, and the variable each is also read from,
/// is `Enrichment.Configuration(settings:door:)`'s; where the results are stored is
/// `StorageOptionGroup`'s.
public struct EnrichOptionGroup: ParsableArguments, FlagGroup {
    @Option(name: .setting(.deadline), help: .setting(.deadline, "Deadline for each payload: 300ms, 2s, 1.5s",
                                                      "default \(DurationText.format(DeadlinePolicy.standardDefault)), \(DurationText.format(DeadlinePolicy.service.default)) for serve, relay and lab"),
            transform: parseDuration)
    var deadline: Duration?

    @Option(name: .setting(.maxDeadline), help: .setting(.maxDeadline, "Longest deadline: the most --deadline, a payload's Attache-Deadline-Ms header (service, relay, worker) or a lab run may ask for",
                                                         "default \(DurationText.format(standardOptions.runtime.deadlinePolicy.maximum))"),
            transform: parseDuration)
    var maxDeadline: Duration?

    @Option(name: .setting(.onTimeout), help: .setting(.onTimeout, "What to emit when the deadline passes: original or best-attempt",
                                                       "default \(standardOptions.runtime.deadlinePolicy.onTimeout.rawValue)"))
    var onTimeout: DeadlinePolicy.OnTimeout?

    @Option(name: [.customLong("allow-address"), .setting(.allowAddresses)],
            help: .setting(.allowAddresses, "Allow connections to this network (CIDR); repeatable. Nothing private or loopback is allowed by default",
                           "comma-separated; the flags replace it"),
            transform: parseCIDR)
    var allowAddress: [CIDR] = []

    @Option(name: .setting(.proxy), help: .setting(.proxy, "HTTP proxy for media fetches; proxy environment variables are ignored. Through a proxy the address policy cannot see where a request goes: targets named by a private address literal are refused, names are resolved by the proxy, which must enforce its own rules"))
    var proxy: String?

    @Option(name: .setting(.thumbnailSize), help: .setting(.thumbnailSize, "Longest edge of thumbnails, in pixels", "default \(standardOptions.media.render.thumbnailSize)"))
    var thumbnailSize: Int?

    @Option(name: .setting(.displaySize), help: .setting(.displaySize, "Longest edge of display copies, made only for larger sources",
                                                         "default \(standardOptions.media.render.displaySize)"))
    var displaySize: Int?

    @Option(name: .setting(.maxPayloadBytes), help: .setting(.maxPayloadBytes, "APNs payload budget in bytes, 5120 for VoIP",
                                                             "default \(standardOptions.runtime.maxPayloadBytes)"))
    var maxPayloadBytes: Int?

    @Option(name: .setting(.attachmentsKey), help: .setting(.attachmentsKey, "Key the attachments array is added under",
                                                            "default \(standardOptions.runtime.attachmentsKey)"))
    var attachmentsKey: String?

    @Option(name: .setting(.maxAttachments), help: .setting(.maxAttachments, "Most attachments per payload",
                                                            "default \(standardOptions.media.dialects.maxAttachments)"))
    var maxAttachments: Int?

    @Option(name: [.customLong("media-key"), .setting(.mediaKeys)],
            help: .setting(.mediaKeys, "A key read as a generic media URL, after the default ones: a top-level name, or a JSON Pointer (/data/image/0/url) for a nested one; KEY=TYPEKEY also names the field that tells its SDK the media's type, rewritten with the URL; repeatable",
                           "comma-separated; the flags replace it"))
    var mediaKeys: [String] = []

    @Flag(name: .setting(.noDefaultMediaKeys), help: .setting(.noDefaultMediaKeys, "Read only the --media-key keys, not the default generic ones (\(DialectReader.defaultGenericKeys.joined(separator: ", ")))"))
    var noDefaultMediaKeys = false

    @Flag(name: .setting(.noAndroidCopy), help: .setting(.noAndroidCopy, "Send an FCM request's Android image (android.notification.image, else notification.image) as it came, instead of a validated copy within FCM's 1 MB and 1350 px, made whether or not the APNs part is mutable"))
    var noAndroidCopy = false

    @Option(name: .setting(.poster), help: .setting(.poster, "Movie poster frames: fast (keyframe at or before the thumbnail time) or exact (first frame at or after it)",
                                                    "default \(standardOptions.media.posterMode.rawValue)"))
    var poster: PosterMode?

    @OptionGroup var transcode: TranscodeOptionGroup

    @Option(name: .setting(.maxMediaJobs), help: .setting(.maxMediaJobs, "Media decoded, rendered and stored at once; bounds memory", "default \(standardOptions.maxMediaJobs)"))
    var maxMediaJobs: Int?

    @Option(name: .setting(.isolation), help: .setting(.isolation, "Where downloaded media is decoded: process (sandboxed attache-decode helpers, found beside this executable: a crash or a bomb costs one attachment) or in-process",
                                                       "default process for serve, worker, relay, lab and batch, in-process for enrich and timeline"))
    var isolation: Isolation?

    @Option(name: .setting(.decoders), help: .setting(.decoders, "Decoder helpers kept running with --isolation process, each decoding one file at a time. Movies and big animations run on all but one of them: the last is kept for images",
                                                      "default one per core, two at least"))
    var decoders: Int?

    public init() {}

    public func flags(into flags: inout Flags) {
        flags.set(.deadline, deadline)
        flags.set(.maxDeadline, maxDeadline)
        flags.set(.onTimeout, onTimeout)
        flags.set(.allowAddresses, allowAddress)
        flags.set(.proxy, proxy)
        flags.set(.thumbnailSize, thumbnailSize)
        flags.set(.displaySize, displaySize)
        flags.set(.maxPayloadBytes, maxPayloadBytes)
        flags.set(.attachmentsKey, attachmentsKey)
        flags.set(.maxAttachments, maxAttachments)
        flags.set(.mediaKeys, mediaKeys)
        flags.set(.noDefaultMediaKeys, noDefaultMediaKeys)
        flags.set(.noAndroidCopy, noAndroidCopy)
        flags.set(.poster, poster)
        transcode.flags(into: &flags)
        flags.set(.maxMediaJobs, maxMediaJobs)
        flags.set(.isolation, isolation)
        flags.set(.decoders, decoders)
    }
}

/// Where a command's results are stored and under which URL devices read them: every command that
/// enriches but the lab, which keeps its own store.
public struct StorageOptionGroup: ParsableArguments, FlagGroup {
    @Option(name: .setting(.store), help: .setting(.store, "Where validated media and thumbnails are stored: a directory, or s3://BUCKET/PREFIX (credentials, region and endpoint from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION, AWS_ENDPOINT_URL_S3)",
                                                    "default the media directory"))
    var store: String?

    @Option(name: .setting(.mediaDir), help: .setting(.mediaDir, "The store's directory (--store DIR), and with an s3:// store where downloads wait",
                                                      "default \(standardOptions.storage.directory)"))
    var mediaDir: String?

    @Option(name: .setting(.publicBaseURL), help: .setting(.publicBaseURL, "Base URL the media directory is served under; URLs become BASE/<hash>.<ext> and the dialect's own URL field is rewritten"))
    var publicBaseURL: String?

    public init() {}

    public func flags(into flags: inout Flags) {
        flags.set(.store, store)
        flags.set(.mediaDir, mediaDir)
        flags.set(.publicBaseURL, publicBaseURL)
    }
}
