import ArgumentParser
import AttacheMedia

struct Thumbnail: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Validate an image file and write its thumbnail (the pipeline's own code; used by the benchmarks)."
    )

    @Argument(help: "Image file (JPEG, PNG or GIF).")
    var file: String

    @Option(name: .shortAndLong, help: "Output file.")
    var output: String

    @Option(help: "Longest edge in pixels.")
    var size: Int = 320

    func run() async throws {
        let bytes = try readInput(file)
        let pipeline = ImagePipeline()
        do {
            let header = try pipeline.inspect(bytes)
            let options = RenderOptions(thumbnailSize: size, displaySize: Int.max)
            let rendition = try pipeline.render(bytes, header: header, options: options)
            try writeFile(output, rendition.thumbnail.bytes)
            writeStdout(Array("\(rendition.thumbnail.width)x\(rendition.thumbnail.height) \(rendition.thumbnail.format.rawValue)\n".utf8))
        } catch let error as MediaError {
            printError("attache: \(file): \(error)")
            throw ExitCode(1)
        }
    }
}
