import ArgumentParser
import Attache
import AttacheFetch
import AttacheMedia
import AttachePayload
import Logging
#if canImport(Glibc)
import Glibc
#endif

struct Enrich: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Enrich one push payload: fetch, validate and thumbnail its media, print the payload to send.",
        discussion: """
        stdout carries only the payload to send (enriched, or the original byte for byte). Exit status is 0
        whenever a payload was emitted, whatever the outcome; 2 when the input is not a payload (not a JSON
        object, nested deeper than 64 levels, or over 64 KiB).
        Environment: ATTACHE_ALLOW_ADDRESSES (comma-separated CIDRs, added to --allow-address).
        """
    )

    @Argument(help: "Payload file, or - for standard input.")
    var file: String = "-"

    @Option(help: "Deadline for the whole payload (300ms, 2s, 1.5s).", transform: parseDuration)
    var deadline: Duration = .seconds(10)

    @Option(help: "Where validated media and thumbnails are stored.")
    var mediaDir: String = "./attache-media"

    @Option(help: "Base URL the media directory is served under; URLs become BASE/<hash>.<ext> and the dialect's own URL field is rewritten.")
    var publicBaseURL: String?

    @Option(help: "What to emit when the deadline passes: original or best-attempt.")
    var onTimeout: TimeoutPolicy = .original

    @Option(help: "Write a JSON report to FILE (- for stderr).")
    var report: String?

    @Option(help: "Allow connections to this network (CIDR); repeatable. Nothing private or loopback is allowed by default.", transform: parseCIDR)
    var allowAddress: [CIDR] = []

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

    @Flag(help: "Print a one-line outcome on stderr.")
    var summary = false

    func validate() throws {
        guard thumbnailSize >= 16, thumbnailSize <= 4096 else { throw ValidationError("--thumbnail-size must be between 16 and 4096") }
        guard displaySize >= thumbnailSize else { throw ValidationError("--display-size must be at least --thumbnail-size") }
        guard maxPayloadBytes >= 256 else { throw ValidationError("--max-payload-bytes must be at least 256") }
        guard (1...16).contains(maxAttachments) else { throw ValidationError("--max-attachments must be between 1 and 16") }
        guard deadline > .zero else { throw ValidationError("--deadline must be positive") }
    }

    func run() async throws {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .notice
            return handler
        }
        let input: [UInt8]
        do {
            input = try readInput(file)
        } catch {
            printError("attache: \(error)")
            throw ExitCode(2)
        }
        var options = EnrichmentOptions()
        options.deadline = deadline
        options.onTimeout = onTimeout
        options.mediaDirectory = mediaDir
        options.publicBaseURL = publicBaseURL
        options.allowedAddresses = allowAddress + (try environmentAllowances())
        options.thumbnailSize = thumbnailSize
        options.displaySize = displaySize
        options.maxPayloadBytes = maxPayloadBytes
        options.attachmentsKey = attachmentsKey
        options.maxAttachments = maxAttachments
        if !mediaKeys.isEmpty { options.genericKeys = mediaKeys }
        options.posterMode = poster

        let enrichment: Enrichment
        do {
            enrichment = try Enrichment(options: options)
        } catch {
            printError("attache: \(error)")
            throw ExitCode(1)
        }
        defer { enrichment.shutdown() }
        let emission: Emission
        do {
            emission = try await enrichment.enrich(input, identifier: file)
        } catch {
            printError("attache: \(file): \(error)")
            throw ExitCode(2)
        }
        writeStdout(emission.bytes)
        if let report {
            let text = JSONWriter.bytes(emission.report.json) + [0x0a]
            if report == "-" { writeStderr(text) } else { try writeFile(report, text) }
        }
        if summary { printError("\(file): \(emission.report.summary)") }
    }
}

func parseDuration(_ text: String) throws -> Duration {
    guard let d = DurationText.parse(text) else { throw ValidationError("not a duration: \(text) (use 300ms, 2s, 1.5s)") }
    return d
}

func parseCIDR(_ text: String) throws -> CIDR {
    guard let c = CIDR(text) else { throw ValidationError("not an address or CIDR: \(text)") }
    return c
}

func environmentAllowances() throws -> [CIDR] {
    guard let raw = getenv("ATTACHE_ALLOW_ADDRESSES") else { return [] }
    return try String(cString: raw).split(separator: ",").map { try parseCIDR(String($0.filter { $0 != " " })) }
}

extension TimeoutPolicy: ExpressibleByArgument {}
