import ArgumentParser
import AttacheCommandLine
import Attache
import AttacheFetch
import AttacheMedia

/// The options every command that enriches shares (`enrich`, `batch`, `timeline`).
struct EnrichOptionGroup: ParsableArguments {
    @Option(help: "Deadline for each payload (300ms, 2s, 1.5s).", transform: parseDuration)
    var deadline: Duration = .seconds(10)

    @Option(help: "Where validated media and thumbnails are stored.")
    var mediaDir: String = "./attache-media"

    @Option(help: "Base URL the media directory is served under; URLs become BASE/<hash>.<ext> and the dialect's own URL field is rewritten.")
    var publicBaseURL: String?

    @Option(help: "What to emit when the deadline passes: original or best-attempt.")
    var onTimeout: TimeoutPolicy = .original

    @Option(help: "Allow connections to this network (CIDR); repeatable. Nothing private or loopback is allowed by default. Also ATTACHE_ALLOW_ADDRESSES.", transform: parseCIDR)
    var allowAddress: [CIDR] = []

    @Option(help: "HTTP proxy for media fetches [ATTACHE_PROXY]; proxy environment variables are ignored. Through a proxy the address policy cannot see where a request goes: targets named by a private address literal are refused, names are resolved by the proxy, which must enforce its own rules.")
    var proxy: String?

    @Option(help: "Longest edge of thumbnails, in pixels.")
    var thumbnailSize: Int = 320

    @Option(help: "Longest edge of display copies, made only for larger sources.")
    var displaySize: Int = 1080

    @Option(help: "APNs payload budget in bytes (5120 for VoIP).")
    var maxPayloadBytes: Int = 4096

    @Option(help: "Key the attachments array is added under.")
    var attachmentsKey: String = "attachments"

    @Option(help: "Most attachments per payload.")
    var maxAttachments: Int = 4

    @Option(name: .customLong("media-key"), help: "Top-level key read as a generic media URL; repeatable (default: media-url, image-url).")
    var mediaKeys: [String] = []

    @Option(help: "Movie poster frames: fast (keyframe at or before the thumbnail time) or exact (first frame at or after it).")
    var poster: PosterMode = .fast

    func validate() throws {
        guard thumbnailSize >= 16, thumbnailSize <= 4096 else { throw ValidationError("--thumbnail-size must be between 16 and 4096") }
        guard displaySize >= thumbnailSize else { throw ValidationError("--display-size must be at least --thumbnail-size") }
        guard maxPayloadBytes >= 256 else { throw ValidationError("--max-payload-bytes must be at least 256") }
        guard (1...16).contains(maxAttachments) else { throw ValidationError("--max-attachments must be between 1 and 16") }
        guard deadline > .zero else { throw ValidationError("--deadline must be positive") }
    }

    func options() throws -> EnrichmentOptions {
        var options = EnrichmentOptions()
        options.deadline = deadline
        options.onTimeout = onTimeout
        options.mediaDirectory = mediaDir
        options.publicBaseURL = publicBaseURL
        options.allowedAddresses = allowAddress + (try environmentAllowances())
        options.proxy = proxy ?? environment("ATTACHE_PROXY")
        options.thumbnailSize = thumbnailSize
        options.displaySize = displaySize
        options.maxPayloadBytes = maxPayloadBytes
        options.attachmentsKey = attachmentsKey
        options.maxAttachments = maxAttachments
        if !mediaKeys.isEmpty { options.genericKeys = mediaKeys }
        options.posterMode = poster
        return options
    }
}
