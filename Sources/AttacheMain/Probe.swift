import ArgumentParser
import AttacheCommandLine
import AttacheMedia
import AttacheSupport
import AttachePayload

struct ProbeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "probe",
        abstract: "Print what a movie or sound file is and whether iOS attaches it, as JSON (the pipeline's own probe).",
        discussion: "Exit status 0 when the file could be read (whatever the verdict), 1 when it is not a readable movie or sound."
    )

    @Argument(help: "A movie or sound file (MP4, MOV, M4A, AVI, MPEG, MP3, WAV, AIFF, WebM, Ogg, FLAC…).")
    var file: String?

    @Flag(help: "Print the encoders movies and sounds are converted with here (FFmpeg's, found at run time) instead.")
    var encoders = false

    func validate() throws {
        guard (file == nil) == encoders else { throw ValidationError("give a file, or --encoders") }
    }

    @OptionGroup var isolation: IsolationOptionGroup

    func run() async throws {
        guard let file else {
            let h264 = VideoPipeline.h264Encoder()
            writeStdout(JSONWriter.bytes(.object(JSONObject(["h264": h264.map(JSONValue.string) ?? .null, "aac": .string("aac")]))) + [0x0a])
            if h264 == nil { throw ExitCode(1) }
            return
        }
        let input = try InputFile(file)
        do {
            let facts: MediaFacts
            if let pool = try isolation.pool() {
                defer { pool.shutdown() }
                facts = try await pool.probe(input.withUnsafeBytes { Array($0) }, limits: MediaLimits())
            } else {
                facts = try input.withUnsafeBytes { try VideoPipeline().probe($0) }
            }
            writeStdout(JSONWriter.bytes(facts.json) + [0x0a])
        } catch let error as MediaError {
            var answer = JSONObject(["verdict": .string(error.code.description), "reason": .string(error.message)])
            if let detail = error.detail { answer["detail"] = .string(detail.rawValue) }
            writeStdout(JSONWriter.bytes(.object(answer)) + [0x0a])
            throw ExitCode(1)
        }
    }
}
