import AttachePayload
import AttacheSupport

/// How movies and sounds iOS would refuse, or that are over Apple's caps, become ones it plays:
/// H.264/AAC MP4 for movies, AAC M4A for sounds, streams copied when they already fit.
public struct TranscodeSettings: Sendable, Hashable {
    /// The most a movie may weigh (Apple's cap is 50 MB).
    public var movieBytes: Int
    /// The most a sound may weigh (Apple's cap is 5 MB).
    public var soundBytes: Int
    /// When the whole clip cannot fit at a watchable size, the first this many seconds are kept.
    public var keepSeconds: Double
    /// Longest edge of an encoded movie.
    public var maxEdge: Int
    /// The most bytes downloaded of media that will be converted.
    public var sourceBytes: Int
    /// x264's speed preset.
    public var preset: String

    public init(movieBytes: Int = 50_000_000, soundBytes: Int = 5_000_000, keepSeconds: Double = 30, maxEdge: Int = 1280,
                sourceBytes: Int = 200_000_000, preset: String = "veryfast") {
        self.movieBytes = movieBytes
        self.soundBytes = soundBytes
        self.keepSeconds = keepSeconds
        self.maxEdge = maxEdge
        self.sourceBytes = sourceBytes
        self.preset = preset
    }

    /// These settings with targets no larger than `limits`' caps: what is made for the device is
    /// held to the caps its media is (a tenant's may be below Apple's), so a movie over them that
    /// the device would play as it is gets converted too.
    public func within(_ limits: MediaLimits) -> TranscodeSettings {
        var capped = self
        capped.movieBytes = min(movieBytes, limits.videoBytes)
        capped.soundBytes = min(soundBytes, limits.audioBytes)
        return capped
    }

    /// Presets x264 knows, fastest first.
    public static let presets = ["ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow"]
}

/// A movie or sound written again so that the device plays it.
public struct ConvertedMovie: Sendable, Equatable {
    public enum Method: String, Sendable {
        /// The streams copied into MP4 (milliseconds).
        case remux
        /// Decoded and encoded again.
        case transcode
    }

    public var bytes: [UInt8]
    /// `.mp4`, or `.m4a` for a sound.
    public var format: MediaFormat
    public var method: Method
    /// Seconds written.
    public var duration: Double
    public var width: Int?
    public var height: Int?
    /// Set when only the first seconds were kept: how many.
    public var keptSeconds: Double?
    /// `copy`, `libx264`, `aac`, … (nil: no such stream).
    public var videoEncoder: String?
    public var audioEncoder: String?
    /// How long the conversion took.
    public var milliseconds: Double = 0

    public var uti: String { format == .m4a ? "public.mpeg-4-audio" : MediaFormat.mp4.uti }

    public var json: JSONValue {
        var o = JSONObject()
        o["method"] = .string(method.rawValue)
        o["format"] = .string(format.rawValue)
        o["bytes"] = .int(bytes.count)
        o["duration"] = .double((duration * 1000).rounded() / 1000)
        if let width, let height {
            o["width"] = .int(width)
            o["height"] = .int(height)
        }
        if let keptSeconds { o["kept_seconds"] = .double((keptSeconds * 1000).rounded() / 1000) }
        if let videoEncoder { o["video"] = .string(videoEncoder) }
        if let audioEncoder { o["audio"] = .string(audioEncoder) }
        return .object(o)
    }
}

/// What to write, decided from the facts alone (before any decoding).
public enum TranscodePlanner {
    /// Video codecs an MP4 may carry as they are for iOS; audio likewise.
    static let copyableVideo: Set = ["h264", "hevc"]
    static let copyableAudio: Set = ["aac", "mp3"]
    /// Below this much video bitrate at the smallest edge, a clip is cut rather than made unwatchable.
    static let minVideoRate = 250_000
    /// Below this even the first seconds are not worth sending.
    static let floorVideoRate = 40_000
    static let smallestEdge = 320
    /// What is copied as it is stays within these; anything else is encoded again to them.
    static let maxFPS = 60.0
    static let minEdge = 16
    /// Bits per pixel per frame under which the picture is made smaller instead.
    static let minBitsPerPixel = 0.06
    /// The share of the target the streams are planned to (the muxer's index and the encoder's
    /// buffer take the rest).
    static let margin = 0.92

    /// Nil when the file is already one the device plays within its cap.
    /// Whether a file of these facts and size is converted: one the device would not play, or one
    /// over its target.
    public static func converts(_ facts: MediaFacts, size: Int, settings: TranscodeSettings) -> Bool {
        !facts.isSupported || size > (facts.kind == .video ? settings.movieBytes : settings.soundBytes)
    }

    /// The most pixels a movie's conversion may decode (frames × width × height of the part kept,
    /// at the frame rate the header declares): about 30 s of 1080p at 60 frames a second, a few
    /// times what the benchmarks' 30 s 1080p WebM takes.
    static let mostTranscodePixels = 4_000_000_000

    static func plan(_ raw: RawMediaFacts, facts: MediaFacts, size: Int, settings: TranscodeSettings) throws
        -> (plan: TranscodePlan, method: ConvertedMovie.Method, keptSeconds: Double?)?
    {
        guard converts(facts, size: size, settings: settings) else { return nil }
        let target = facts.kind == .video ? settings.movieBytes : settings.soundBytes
        let videoCodec = raw.videoCodec ?? "", audioCodec = raw.audioCodec ?? ""
        let length = facts.duration > 0 ? facts.duration : settings.keepSeconds
        var plan = TranscodePlan(video: raw.hasVideo ? .encode : .drop, audio: raw.hasAudio ? .encode : .drop, maxBytes: target)
        plan.preset = settings.preset
        plan.channels = min(max(raw.channels, 1), 2)
        plan.sampleRate = [48_000, 44_100, 32_000, 24_000, 22_050, 16_000].contains(raw.sampleRate) ? raw.sampleRate : 48_000
        plan.audioRate = plan.channels == 1 ? 64_000 : 128_000

        // The streams as they are, into MP4, when they are ones it plays and small enough.
        let copyVideo = raw.hasVideo && copyableVideo.contains(videoCodec) && (raw.frameRate ?? 30) <= maxFPS + 1
            && min(raw.width, raw.height) >= minEdge
        let copyAudio = raw.hasAudio && copyableAudio.contains(audioCodec) && (raw.hasVideo || audioCodec == "aac")
        if size <= target && (copyVideo || (!raw.hasVideo && copyAudio)) {
            plan.video = copyVideo ? .copy : .drop
            plan.audio = raw.hasAudio ? (copyAudio ? .copy : .encode) : .drop
            return (plan, .remux, nil)
        }

        let budget = Double(target) * 8 * margin
        guard raw.hasVideo else {
            // A sound: 64 kb/s (mono) or 128 kb/s as long as it fits, down to 32 kb/s; past that, cut.
            var kept = length
            var rate = min(Double(plan.audioRate), budget / kept)
            let floor = 32_000.0
            if rate < floor {
                kept = min(settings.keepSeconds, budget / floor)
                rate = min(Double(plan.audioRate), budget / kept)
            }
            plan.audioRate = Int(rate)
            if kept < length { plan.maxSeconds = kept }
            return (plan, .transcode, kept < length ? kept : nil)
        }

        // Rates for keeping `seconds`: one second of encoder buffer on top of the average is the
        // most the VBV lets the file grow; sound takes its rate, or a fifth when that is less.
        func rates(_ seconds: Double) -> (video: Double, audio: Double) {
            let total = budget / (seconds + 1)
            let audio = raw.hasAudio ? min(Double(plan.audioRate), max(24_000, total * 0.2)) : 0
            return (total - audio, audio)
        }
        var kept = length
        var (videoRate, audioRate) = rates(kept)
        if videoRate < Double(minVideoRate) {
            kept = min(settings.keepSeconds, length)
            (videoRate, audioRate) = rates(kept)
            guard videoRate >= Double(floorVideoRate) else {
                throw MediaError(.limitsExceeded, "\(target) bytes cannot hold even the first \(Int(kept.rounded(.up))) s of this movie")
            }
        }
        let fps = min(max(raw.frameRate ?? 30, 1), maxFPS)
        // What decoding the kept part costs, known from the header before a frame is decoded: past
        // the budget the conversion is refused at once rather than run into the CPU limit with
        // a decoder helper held all the while.
        let decodedPixels = kept * min(max(raw.frameRate ?? 30, 1), 1000) * Double(raw.width) * Double(raw.height)
        guard decodedPixels <= Double(mostTranscodePixels) else {
            throw MediaError(.limitsExceeded, "\(Int(kept.rounded(.up))) s of \(raw.width)x\(raw.height) are \(Int(decodedPixels / 1e9)) billion pixels to decode, "
                + "over the \(mostTranscodePixels / 1_000_000_000) billion a conversion may take")
        }
        plan.maxFPS = maxFPS
        plan.frameRate = fps
        let longest = max(raw.width, raw.height, 1), shortest = max(min(raw.width, raw.height), 1)
        var edge = Double(min(longest, settings.maxEdge))
        let aspect = Double(shortest) / Double(longest)
        while edge > Double(smallestEdge) && videoRate / (edge * edge * aspect * fps) < minBitsPerPixel {
            edge *= 0.85
        }
        // Nothing smaller than 16 pixels a side: a 1x1 movie is drawn larger rather than encoded as
        // something no player shows.
        let scale = max(edge / Double(longest), Double(minEdge) / Double(shortest))
        plan.width = even(Double(raw.width) * scale)
        plan.height = even(Double(raw.height) * scale)
        plan.maxRate = Int(videoRate)
        plan.bufferSize = Int(videoRate)
        plan.audioRate = Int(audioRate)
        if kept < length { plan.maxSeconds = kept }
        return (plan, .transcode, kept < length ? kept : nil)
    }

    /// Frames the project's decoders made (an animation) as H.264, `width` x `height` (made even).
    static func animation(width: Int, height: Int, frames: Int, seconds: Double, settings: TranscodeSettings) -> TranscodePlan {
        var plan = TranscodePlan(video: .encode, audio: .drop, maxBytes: settings.movieBytes)
        plan.preset = settings.preset
        plan.width = even(Double(max(width, minEdge)))
        plan.height = even(Double(max(height, minEdge)))
        plan.maxFPS = maxFPS
        plan.frameRate = min(max(Double(frames) / max(seconds, 0.01), 1), maxFPS)
        // An animation is short and its frames mostly still: a few megabits a second are plenty,
        // and the target bounds longer ones.
        let rate = min(4_000_000, Double(settings.movieBytes) * 8 * margin / (max(seconds, 1) + 1))
        plan.maxRate = Int(rate)
        plan.bufferSize = Int(rate)
        return plan
    }

    /// H.264 at 4:2:0 wants even sizes.
    static func even(_ value: Double) -> Int {
        max(2, Int(value.rounded()) & ~1)
    }
}

extension VideoPipeline {
    /// The bytes as a movie or sound the device plays, when they are not one already (nil then).
    func convert(_ bytes: UnsafeRawBufferPointer, format: MediaFormat, facts: MediaFacts, settings: TranscodeSettings,
                 abort: AbortFlag) throws -> ConvertedMovie?
    {
        guard let demuxer = Self.demuxer(for: format) else { return nil }
        var decided: (method: ConvertedMovie.Method, keptSeconds: Double?)?
        let start = ContinuousClock.now
        let result = try VideoCodecs.transcode(bytes, demuxer: demuxer, maxPixels: limits.maxVideoPixels, maxStreams: limits.maxStreams,
                                               abort: abort) { raw in
            guard var made = try TranscodePlanner.plan(raw, facts: facts, size: bytes.count, settings: settings) else { return nil }
            decided = (made.method, made.keptSeconds)
            made.plan.limitSeconds = limits.maxDuration
            return made.plan
        }
        guard let output = result.output, let decided else { return nil }
        // A file that stops being readable (or decodable) part-way would play as a shorter clip
        // than the one sent: that is a broken file, not a conversion.
        let expected = min(facts.duration > 0 ? facts.duration : output.duration, decided.keptSeconds ?? .infinity)
        if output.duration < expected * 0.9 - 0.1 {
            func seconds(_ value: Double) -> String { "\((value * 100).rounded() / 100) s" }
            throw MediaError(.invalidMedia, "only \(seconds(output.duration)) of \(seconds(expected)) could be read and decoded")
        }
        let swap = facts.rotation == 90 || facts.rotation == 270
        return ConvertedMovie(
            bytes: output.bytes, format: facts.kind == .audio ? .m4a : .mp4, method: decided.method, duration: output.duration,
            width: output.width > 0 ? (swap ? output.height : output.width) : nil,
            height: output.height > 0 ? (swap ? output.width : output.height) : nil,
            keptSeconds: decided.keptSeconds, videoEncoder: output.videoEncoder, audioEncoder: output.audioEncoder,
            milliseconds: start.duration(to: .now).milliseconds
        )
    }

    /// The H.264 encoder movies are made with here, if FFmpeg has one.
    public static func h264Encoder() -> String? {
        VideoCodecs.h264Encoder()
    }
}
