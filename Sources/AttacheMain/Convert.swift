import ArgumentParser
import AttacheCommandLine
import AttacheMedia
import AttachePayload
import AttacheSupport

struct ConvertCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "convert",
        abstract: "Make a movie, sound or animation the device does not play into one it does (the pipeline's own conversion), and print what was done as JSON.",
        discussion: """
            Movies become H.264/AAC MP4 (streams that already fit are copied), sounds AAC in M4A, animated GIFs over 10 MB and \
            animated WebP/AVIF an H.264 MP4. A file the device already plays within its cap is left alone: nothing is written and \
            the JSON says "method": "none". Exit status 1 when the file cannot be converted, with the reason.
            """
    )

    @Argument(help: "A movie, sound or animation (WebM, MKV, MPEG-TS, Ogg, FLAC, WAV, GIF, WebP, AVIF…).")
    var file: String

    @Option(name: .shortAndLong, help: "Where the converted file goes (.mp4 or .m4a).")
    var output: String

    @Option(help: "Most bytes of an animated GIF the device gets as it is; over it, the GIF becomes a movie (default Apple's 10 MB, at most that).")
    var imageMaxBytes: Int?

    @OptionGroup var transcode: TranscodeOptionGroup
    @OptionGroup var isolation: IsolationOptionGroup

    func validate() throws {
        if let bytes = imageMaxBytes, !(1_000...MediaLimits().imageBytes).contains(bytes) {
            throw ValidationError("--image-max-bytes must be between 1000 and \(MediaLimits().imageBytes)")
        }
    }

    func run() async throws {
        guard let settings = try transcode.settings() else { throw ValidationError("--no-transcode leaves nothing to do") }
        let input = try InputFile(file)
        var options = RenderOptions(makesDisplayCopy: true, transcode: settings)
        options.keepsGIFCopy = false  // one file out: the movie
        var limits = MediaLimits()
        if let imageMaxBytes { limits.imageBytes = imageMaxBytes }
        let start = ContinuousClock.now
        do {
            // In this process the mapped file is read where it is (no copy of a 20 MB GIF or a
            // long clip); a helper gets the bytes.
            let pool = try isolation.pool()
            defer { pool?.shutdown() }
            var answer = JSONObject()
            var made: [UInt8]?
            if input.withUnsafeBytes({ Sniffer.sniff($0) })?.kind == .image {
                let rendition: ImageRendition
                if let pool {
                    rendition = try await pool.image(.memory(input.withUnsafeBytes { Array($0) }), format: nil, options: options,
                                                     limits: limits).rendition
                } else {
                    let pipeline = ImagePipeline(limits: limits)
                    rendition = try input.withUnsafeBytes { try pipeline.render($0, header: try pipeline.inspect($0), options: options) }
                }
                answer["from"] = .string(rendition.header.format.rawValue)
                if let display = rendition.display, display.format == .mp4 {
                    made = display.bytes
                    answer["method"] = .string("transcode")
                    answer["format"] = .string("mp4")
                    answer["bytes"] = .int(display.bytes.count)
                    answer["width"] = .int(display.width)
                    answer["height"] = .int(display.height)
                    answer["frames"] = .int(display.frames)
                }
            } else {
                let movie: MovieRendition
                if let pool {
                    movie = try await pool.movie(.memory(input.withUnsafeBytes { Array($0) }), format: nil, options: options, time: nil,
                                                 posterMode: .fast, limits: MediaLimits())
                } else {
                    movie = try input.withUnsafeBytes { try VideoPipeline().render($0, options: options, time: nil) }
                }
                answer["from"] = .string(movie.facts.format.rawValue)
                if let converted = movie.converted {
                    made = converted.bytes
                    if case .object(let o) = converted.json { for member in o.members { answer[member.key] = member.value } }
                }
            }
            if let made { try writeFile(output, made) } else { answer["method"] = .string("none") }
            answer["ms"] = .milliseconds(start.duration(to: .now).milliseconds)
            writeStdout(JSONWriter.bytes(.object(answer)) + [0x0a])
        } catch let error as MediaError {
            printError("attache: \(file): \(error)\(error.detail.map { " (\($0))" } ?? "")")
            throw ExitCode(1)
        }
    }
}
