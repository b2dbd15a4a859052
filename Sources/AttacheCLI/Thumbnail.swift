import ArgumentParser
import AttacheCommandLine
import AttacheMedia
import AttacheSupport

struct Thumbnail: AsyncParsableCommand {
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
    var size: Int = 320

    @Option(help: "Movies: seconds into the clip.")
    var time: Double?

    @Option(help: "Movies: fast (keyframe at or before the time) or exact (first frame at or after it).")
    var poster: PosterMode = .fast

    func run() async throws {
        let input = try InputFile(file)
        let options = RenderOptions(thumbnailSize: size, displaySize: Int.max)
        do {
            let thumbnail: RenderedImage = try input.withUnsafeBytes { bytes in
                if Sniffer.sniff(bytes)?.kind == .image {
                    let pipeline = ImagePipeline()
                    return try pipeline.render(bytes, header: try pipeline.inspect(bytes), options: options).thumbnail
                }
                let movie = try VideoPipeline(posterMode: poster).render(bytes, options: options, time: time)
                guard let t = movie.thumbnail else { throw MediaError(.unsupportedType, "a sound has no picture") }
                return t
            }
            try writeFile(output, thumbnail.bytes)
            writeStdout(Array("\(thumbnail.width)x\(thumbnail.height) \(thumbnail.format.rawValue)\n".utf8))
        } catch let error as MediaError {
            printError("attache: \(file): \(error)")
            throw ExitCode(1)
        }
    }
}
