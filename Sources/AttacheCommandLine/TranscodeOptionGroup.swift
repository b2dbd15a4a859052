import ArgumentParser
import AttacheMedia

/// How movies and sounds the device does not play are converted: the enriching commands' options
/// and `attache convert`'s, each also read from an `ATTACHE_*` variable.
public struct TranscodeOptionGroup: ParsableArguments {
    @Flag(name: .customLong("no-transcode"), help: "Refuse movies and sounds the device does not play (WebM, MKV, Ogg, FLAC, over the caps) instead of making H.264/AAC MP4 or AAC M4A copies of them [ATTACHE_NO_TRANSCODE].")
    var noTranscode = false

    @Option(help: "Most bytes of a movie made for the device, 50 MB at most (Apple's cap) [ATTACHE_MOVIE_MAX_BYTES, default 50000000].")
    var movieMaxBytes: Int?

    @Option(help: "Most bytes of a sound made for the device, 5 MB at most (Apple's cap) [ATTACHE_SOUND_MAX_BYTES, default 5000000].")
    var soundMaxBytes: Int?

    @Option(help: "When a whole movie or sound cannot fit its most bytes, keep its start, this long: 30s, 1m [ATTACHE_MOVIE_KEEP, default 30s].", transform: parseDuration)
    var movieKeep: Duration?

    @Option(help: "Longest edge of an encoded movie, in pixels [ATTACHE_MOVIE_EDGE, default 1280].")
    var movieEdge: Int?

    @Option(help: "x264's speed preset for encoded movies, ultrafast to veryslow [ATTACHE_TRANSCODE_PRESET, default veryfast].")
    var transcodePreset: String?

    public init() {}

    /// The settings, flags first, then `settings`; nil with `--no-transcode`.
    public func settings(_ settings: Settings = Settings()) throws -> TranscodeSettings? {
        let defaults = TranscodeSettings()
        var t = defaults
        t.movieBytes = try settings.int(movieMaxBytes, "ATTACHE_MOVIE_MAX_BYTES", option: "--movie-max-bytes", default: defaults.movieBytes,
                                        in: 10_000...defaults.movieBytes)
        t.soundBytes = try settings.int(soundMaxBytes, "ATTACHE_SOUND_MAX_BYTES", option: "--sound-max-bytes", default: defaults.soundBytes,
                                        in: 10_000...defaults.soundBytes)
        t.keepSeconds = try settings.duration(movieKeep, "ATTACHE_MOVIE_KEEP", option: "--movie-keep", default: .seconds(defaults.keepSeconds)).seconds
        t.maxEdge = try settings.int(movieEdge, "ATTACHE_MOVIE_EDGE", option: "--movie-edge", default: defaults.maxEdge, in: 64...3840)
        t.preset = settings.string(transcodePreset, "ATTACHE_TRANSCODE_PRESET", default: defaults.preset)
        guard TranscodeSettings.presets.contains(t.preset) else {
            throw ValidationError("--transcode-preset \(t.preset) is not one of \(TranscodeSettings.presets.joined(separator: ", "))")
        }
        return try settings.flag(noTranscode, "ATTACHE_NO_TRANSCODE") ? nil : t
    }
}

/// How long batch and worker hold a payload whose movie or sound is still being converted at its
/// deadline: the commands that run conversions to completion.
public struct ConversionWaitOptionGroup: ParsableArguments {
    @Option(help: "How long a payload whose movie or sound is still being converted at its deadline waits for the conversion (it then goes out with the movie); 0: it goes out at its deadline with the poster, the conversion going on for the next payload [ATTACHE_CONVERSION_WAIT, default 10m].", transform: parseDuration)
    var conversionWait: Duration?

    public init() {}

    /// The wait; nil for 0.
    public func wait(_ settings: Settings = Settings()) throws -> Duration? {
        let wait = try settings.duration(conversionWait, "ATTACHE_CONVERSION_WAIT", option: "--conversion-wait", default: .seconds(600), positive: false)
        return wait > .zero ? wait : nil
    }
}
