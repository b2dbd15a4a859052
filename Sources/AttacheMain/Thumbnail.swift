import ArgumentParser
import AttacheCommandLine
import AttacheIsolation
import AttacheMedia
import AttacheSupport

struct ThumbnailCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "thumbnail",
        abstract: "Validate a media file and write its thumbnail (the pipeline's own code; used by the benchmarks).",
        discussion: "Images: the first frame (every later frame of a GIF is decoded too, to check it). Movies: a poster frame at --time (default: cover art, else 1 s or 10 % of a short clip)."
    )

    @Argument(help: "Image (JPEG, PNG, GIF) or movie (MP4, MOV, AVI, MPEG).")
    var file: String

    @Option(name: .shortAndLong, help: "Output file.")
    var output: String

    @Option(help: "Longest edge in pixels.")
    var size: Int = RenderOptions().thumbnailSize

    @Option(help: "Movies: seconds into the clip.")
    var time: Double?

    @Option(help: "Movies: fast (keyframe at or before the time) or exact (first frame at or after it).")
    var poster: PosterMode = .fast

    @OptionGroup var isolation: IsolationOptionGroup

    func run() async throws {
        let input = try InputFile(file)
        let options = RenderOptions(thumbnailSize: size, makesDisplayCopy: false)
        do {
            let thumbnail: RenderedImage?
            if let pool = try isolation.pool() {
                defer { pool.shutdown() }
                let bytes = input.withUnsafeBytes { Array($0) }
                if Sniffer.sniff(bytes)?.kind == .image {
                    thumbnail = try await pool.image(bytes, format: nil, options: options, limits: MediaLimits()).rendition.thumbnail
                } else {
                    thumbnail = try await pool.movie(bytes, format: nil, options: options, time: time, posterMode: poster,
                                                     limits: MediaLimits()).thumbnail
                }
            } else {
                // In this process, on the mapped file (no copy).
                thumbnail = try input.withUnsafeBytes { bytes in
                    if Sniffer.sniff(bytes)?.kind == .image {
                        let pipeline = ImagePipeline()
                        return try pipeline.render(bytes, header: try pipeline.inspect(bytes), options: options).thumbnail
                    }
                    return try VideoPipeline(posterMode: poster).render(bytes, options: options, time: time).thumbnail
                }
            }
            guard let thumbnail else { throw MediaError(.unsupportedType, "a sound has no picture") }
            try writeFile(output, thumbnail.bytes)
            writeStdout(Array("\(thumbnail.width)x\(thumbnail.height) \(thumbnail.format.rawValue)\n".utf8))
        } catch let error as MediaError {
            printError("attache: \(file): \(error)\(error.detail.map { " (\($0))" } ?? "")")
            throw ExitCode(1)
        }
    }
}

/// `--isolation` for the one-shot commands that decode a file (`thumbnail`, `probe`): in this
/// process by default (a helper started for one file would cost more than it protects).
struct IsolationOptionGroup: ParsableArguments {
    @Option(help: "Decode in this process (in-process, the default for one file) or in a sandboxed attache-decode helper (process).")
    var isolation: Isolation = .inProcess

    /// A one-helper pool when isolation is asked for; an error at start when the helper cannot
    /// run or sandbox itself.
    func pool() throws -> DecoderPool? {
        guard isolation == .process else { return nil }
        do {
            return try DecoderPool(configuration: .init(helpers: 1))
        } catch {
            printError("attache: \(error)")
            throw ExitCode(1)
        }
    }
}
