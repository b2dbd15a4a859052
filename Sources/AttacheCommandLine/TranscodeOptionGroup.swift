import ArgumentParser
import AttacheMedia
import AttacheSupport

/// How movies and sounds the device does not play are converted: the enriching commands' flags
/// and `attache convert`'s (read by `TranscodeSettings(reader:)`).
public struct TranscodeOptionGroup: ParsableArguments, FlagGroup {
    private static let defaults = TranscodeSettings()

    @Flag(name: .setting(.noTranscode), help: .setting(.noTranscode, "Refuse movies and sounds the device does not play (WebM, MKV, Ogg, FLAC, over the caps) instead of making H.264/AAC MP4 or AAC M4A copies of them"))
    var noTranscode = false

    @Option(name: .setting(.movieMaxBytes), help: .setting(.movieMaxBytes, "Most bytes of a movie made for the device, \(defaults.movieBytes / 1_000_000) MB at most (Apple's cap)", "default \(defaults.movieBytes)"))
    var movieMaxBytes: Int?

    @Option(name: .setting(.soundMaxBytes), help: .setting(.soundMaxBytes, "Most bytes of a sound made for the device, \(defaults.soundBytes / 1_000_000) MB at most (Apple's cap)", "default \(defaults.soundBytes)"))
    var soundMaxBytes: Int?

    @Option(name: .setting(.movieKeep), help: .setting(.movieKeep, "When a whole movie or sound cannot fit its most bytes, keep its start, this long: 30s, 1m", "default \(DurationText.format(.seconds(defaults.keepSeconds)))"),
            transform: parseDuration)
    var movieKeep: Duration?

    @Option(name: .setting(.movieEdge), help: .setting(.movieEdge, "Longest edge of an encoded movie, in pixels", "default \(defaults.maxEdge)"))
    var movieEdge: Int?

    @Option(name: .setting(.transcodePreset), help: .setting(.transcodePreset, "x264's speed preset for encoded movies, ultrafast to veryslow", "default \(defaults.preset)"))
    var transcodePreset: String?

    public init() {}

    public func flags(into flags: inout Flags) {
        flags.set(.noTranscode, noTranscode)
        flags.set(.movieMaxBytes, movieMaxBytes)
        flags.set(.soundMaxBytes, soundMaxBytes)
        flags.set(.movieKeep, movieKeep)
        flags.set(.movieEdge, movieEdge)
        flags.set(.transcodePreset, transcodePreset)
    }
}

/// How long batch and worker hold a payload whose movie or sound is still being converted at its
/// deadline: the commands that run conversions to completion.
public struct ConversionWaitOptionGroup: ParsableArguments, FlagGroup {
    @Option(name: .setting(.conversionWait), help: .setting(.conversionWait, "How long a payload whose movie or sound is still being converted at its deadline waits for the conversion (it then goes out with the movie); 0: it goes out at its deadline with the poster, the conversion going on for the next payload",
                                                            "default \(DurationText.format(EnrichingDoor.conversionWait))"),
            transform: parseDuration)
    var conversionWait: Duration?

    public init() {}

    public func flags(into flags: inout Flags) {
        flags.set(.conversionWait, conversionWait)
    }
}
