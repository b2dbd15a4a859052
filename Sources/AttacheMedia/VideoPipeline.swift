import AttachePayload
import AttacheSupport

/// Facts of a movie or sound, and whether iOS plays it as an attachment.
public struct MediaFacts: Sendable, Equatable {
    public var format: MediaFormat
    public var kind: MediaKind
    /// FFmpeg's demuxer name (`mov,mp4,m4a,3gp,3g2,mj2`, `matroska,webm`, …).
    public var container: String
    public var videoCodec: String?
    public var audioCodec: String?
    /// Displayed size, after rotation.
    public var width: Int
    public var height: Int
    /// Degrees clockwise the picture is turned for display.
    public var rotation: Int
    public var duration: Double
    public var frameRate: Double?
    public var bitRate: Int?
    public var hasVideo: Bool
    public var hasAudio: Bool
    public var hasCoverArt: Bool
    /// Nil when iOS can attach it; otherwise why not (the reason is `unsupported-type`).
    public var unsupportedBecause: String?

    public var isSupported: Bool { unsupportedBecause == nil }

    /// The UTI of the attachment.
    public var uti: String {
        if kind == .audio && format == .mp4 { return "public.mpeg-4-audio" }
        return format.uti
    }

    public var json: JSONValue {
        var o = JSONObject()
        o["format"] = .string(format.rawValue)
        o["kind"] = .string(kind.rawValue)
        o["container"] = .string(container)
        o["video_codec"] = videoCodec.map(JSONValue.string) ?? .null
        o["audio_codec"] = audioCodec.map(JSONValue.string) ?? .null
        o["width"] = hasVideo ? .int(width) : .null
        o["height"] = hasVideo ? .int(height) : .null
        o["rotation"] = .int(rotation)
        o["duration"] = .double((duration * 1000).rounded() / 1000)
        o["frame_rate"] = frameRate.map { .double(($0 * 1000).rounded() / 1000) } ?? .null
        o["bit_rate"] = bitRate.map(JSONValue.int) ?? .null
        o["has_video"] = .bool(hasVideo)
        o["has_audio"] = .bool(hasAudio)
        o["has_cover_art"] = .bool(hasCoverArt)
        o["uti"] = .string(uti)
        o["verdict"] = .string(isSupported ? "supported" : "unsupported-type")
        if let unsupportedBecause { o["reason"] = .string(unsupportedBecause) }
        return .object(o)
    }
}

public enum PosterMode: String, Sendable, CaseIterable {
    /// The keyframe at or before the time: one packet decoded.
    case fast
    /// The first frame at or after the time (at most 300 frames decoded, else the keyframe).
    case exact
}

public struct MovieRendition: Sendable {
    public var facts: MediaFacts
    /// Nil for sounds.
    public var thumbnail: RenderedImage?
    /// Where in the clip the poster frame was taken (seconds).
    public var thumbnailTime: Double?
    /// The file made for the device when the original is not one it plays (or is over its cap).
    public var converted: ConvertedMovie?

    public init(facts: MediaFacts, thumbnail: RenderedImage?, thumbnailTime: Double?, converted: ConvertedMovie? = nil) {
        self.facts = facts
        self.thumbnail = thumbnail
        self.thumbnailTime = thumbnailTime
        self.converted = converted
    }
}

/// Movies and sounds: probe and validate with libavformat, poster frames with libavcodec and
/// libswscale, thumbnails finished by the image path (crop, resample, orientation, encode).
public struct VideoPipeline: Sendable {
    public var limits: MediaLimits
    public var posterMode: PosterMode
    public var maxExactFrames: Int

    public init(limits: MediaLimits = MediaLimits(), posterMode: PosterMode = .fast, maxExactFrames: Int = 300) {
        self.limits = limits
        self.posterMode = posterMode
        self.maxExactFrames = maxExactFrames
    }

    /// Loads FFmpeg now: what a sandboxed decoder does before it may no longer open files.
    public static func loadLibraries() throws {
        try VideoCodecs.load()
    }

    static func demuxer(for format: MediaFormat) -> String? {
        switch format {
        case .mp4, .mov, .m4a: return "mov"
        case .avi: return "avi"
        case .mpeg: return "mpeg"
        case .mpegts: return "mpegts"
        case .mp3: return "mp3"
        case .wav: return "wav"
        case .aiff: return "aiff"
        case .webm, .mkv: return "matroska"
        case .ogg: return "ogg"
        case .flac: return "flac"
        case .jpeg, .png, .gif, .webp, .heic, .avif, .jxl: return nil
        }
    }

    /// The facts and the verdict; throws only when the bytes are not a readable movie or sound.
    public func probe(_ bytes: [UInt8], abort: AbortFlag = AbortFlag()) throws -> MediaFacts {
        try bytes.withUnsafeBytes { try probe($0, abort: abort) }
    }

    /// The same, on bytes the caller holds (a mapped file); they must stay valid until it returns.
    public func probe(_ bytes: UnsafeRawBufferPointer, abort: AbortFlag = AbortFlag()) throws -> MediaFacts {
        try examine(bytes, format: nil, poster: nil, transcode: nil, abort: abort).facts
    }

    /// Validates against iOS's rules and the limits, and makes the poster-frame thumbnail.
    /// `time` is the attachment's thumbnail time; nil means cover art, else 1 s (10 % of short clips).
    /// `format`, when the caller has sniffed the bytes already.
    public func render(_ bytes: [UInt8], format: MediaFormat? = nil, options: RenderOptions, time: Double?, abort: AbortFlag = AbortFlag()) throws -> MovieRendition {
        try bytes.withUnsafeBytes { try render($0, format: format, options: options, time: time, abort: abort) }
    }

    /// The same, on bytes the caller holds; they must stay valid until it returns.
    public func render(_ bytes: UnsafeRawBufferPointer, format: MediaFormat? = nil, options: RenderOptions, time: Double?, abort: AbortFlag = AbortFlag()) throws -> MovieRendition {
        // libswscale scales by area straight to the thumbnail; with a clipping rect it leaves room
        // for the crop and the final resize.
        let edge: Int
        if let clip = options.clip?.clamped {
            edge = Int((Double(options.thumbnailSize * 2) / min(clip.width, clip.height)).rounded(.up))
        } else {
            edge = options.thumbnailSize
        }
        let result = try examine(bytes, format: format, poster: (time, edge), transcode: options.transcode, abort: abort)
        var rendition = MovieRendition(facts: result.facts, thumbnail: nil, thumbnailTime: nil)
        if let frame = result.poster {
            let orientation = [90: 6, 180: 3, 270: 8][result.facts.rotation] ?? 1
            let images = ImagePipeline(limits: limits)
            rendition.thumbnail = try images.encode(
                images.sized(frame, clip: options.clip?.clamped, edge: options.thumbnailSize, orientation: orientation), quality: options.jpegQuality
            )
            rendition.thumbnailTime = result.shownAt
        }
        if let settings = options.transcode, options.convertsNow {
            rendition.converted = try convert(bytes, format: result.facts.format, facts: result.facts, settings: settings, abort: abort)
        }
        return rendition
    }

    /// `transcode`: what a file the device would not play may become; the verdict then refuses
    /// only what cannot be converted.
    private func examine(_ bytes: UnsafeRawBufferPointer, format known: MediaFormat?, poster: (time: Double?, edge: Int)?,
                         transcode: TranscodeSettings?, abort: AbortFlag) throws
        -> (facts: MediaFacts, poster: Pixels?, shownAt: Double)
    {
        guard let format = known ?? Sniffer.sniff(bytes), format.kind != .image, let demuxer = Self.demuxer(for: format) else {
            throw MediaError(.unsupportedType, "not a movie or sound Attache recognises")
        }
        let cap = transcode.map { max($0.sourceBytes, limits.byteCap(for: format.kind)) } ?? limits.byteCap(for: format.kind)
        guard bytes.count <= cap else {
            throw MediaError(.tooLarge, "\(bytes.count) bytes is over the \(cap)-byte \(format.kind.rawValue) cap")
        }
        var judged: MediaFacts?
        let result = try VideoCodecs.examine(
            bytes, demuxer: demuxer, maxPixels: limits.maxVideoPixels, maxStreams: limits.maxStreams, abort: abort
        ) { raw -> PosterRequest? in
            let facts = Self.judge(raw, format: format)
            judged = facts
            guard let poster else { return nil }
            if let reason = facts.unsupportedBecause, transcode == nil || !facts.hasVideo && !facts.hasAudio {
                throw MediaError(.unsupportedType, reason)
            }
            guard facts.duration <= limits.maxDuration else {
                throw MediaError(.limitsExceeded, "\(Int(facts.duration)) s is over the \(Int(limits.maxDuration)) s limit")
            }
            guard raw.channels <= Self.maxChannels else {
                throw MediaError(.limitsExceeded, "\(raw.channels) audio channels (at most \(Self.maxChannels))")
            }
            guard facts.width * facts.height <= limits.maxVideoPixels else {
                throw MediaError(.limitsExceeded, "\(facts.width)x\(facts.height) frames are over the \(limits.maxVideoPixels)-pixel limit")
            }
            guard facts.kind == .video else { return nil }
            return PosterRequest(
                time: poster.time.map { clamp($0, duration: facts.duration) }
                    ?? (facts.hasCoverArt ? nil : defaultTime(facts.duration)),
                exact: posterMode == .exact, maxFrames: maxExactFrames, maxEdge: poster.edge
            )
        }
        guard let facts = judged else { throw MediaError(.invalidMedia, "no facts") }
        return (facts, result.poster, result.shownAt)
    }

    /// 7.1: more channels than any device plays, and what a resampler can still mix down.
    static let maxChannels = 8

    /// 1 s in, or 10 % of a clip shorter than 10 s.
    func defaultTime(_ duration: Double) -> Double {
        duration > 0 ? min(1, duration * 0.1) : 0
    }

    func clamp(_ time: Double, duration: Double) -> Double {
        guard duration > 0 else { return max(0, time) }
        return min(max(0, time), max(0, duration - 0.001))
    }

    /// iOS plays H.264, HEVC and MPEG-4 Part 2 in MP4/MOV, MPEG-1/2 in MPEG-PS, AVI; sounds in
    /// AAC/ALAC (M4A), MP3, PCM (WAV, AIFF).
    static func judge(_ raw: RawMediaFacts, format: MediaFormat) -> MediaFacts {
        let swap = raw.rotation == 90 || raw.rotation == 270
        var facts = MediaFacts(
            format: format, kind: raw.hasVideo ? .video : .audio, container: raw.container,
            videoCodec: raw.videoCodec, audioCodec: raw.audioCodec,
            width: swap ? raw.height : raw.width, height: swap ? raw.width : raw.height, rotation: raw.rotation,
            duration: raw.duration, frameRate: raw.frameRate, bitRate: raw.bitRate,
            hasVideo: raw.hasVideo, hasAudio: raw.hasAudio, hasCoverArt: raw.hasCover, unsupportedBecause: nil
        )
        let audio = raw.audioCodec ?? ""
        let audioOK = raw.audioCodec == nil || ["aac", "mp3", "alac", "ac3", "eac3"].contains(audio) || audio.hasPrefix("pcm_")
        let video = raw.videoCodec ?? ""
        switch format {
        case .mp4, .mov:
            if raw.hasVideo && !["h264", "hevc", "mpeg4"].contains(video) {
                facts.unsupportedBecause = "\(video) video in \(format.rawValue) is not played by iOS"
            } else if !audioOK {
                facts.unsupportedBecause = "\(audio) audio is not played by iOS"
            } else if !raw.hasVideo && !raw.hasAudio {
                facts.unsupportedBecause = "no audio or video stream"
            }
        case .m4a:
            if !["aac", "alac"].contains(audio) { facts.unsupportedBecause = "\(audio.isEmpty ? "no" : audio) audio in m4a" }
        case .mpeg:
            if raw.hasVideo && !["mpeg1video", "mpeg2video"].contains(video) {
                facts.unsupportedBecause = "\(video) video in MPEG program stream"
            }
        case .avi:
            if !raw.hasVideo { facts.unsupportedBecause = "AVI without video" }
        case .mp3:
            if audio != "mp3" { facts.unsupportedBecause = "\(audio) audio in an MP3 file" }
        case .wav, .aiff:
            if !audio.hasPrefix("pcm_") { facts.unsupportedBecause = "\(audio) audio in \(format.rawValue)" }
        case .webm, .mkv:
            facts.unsupportedBecause = "\(video.isEmpty ? audio : video) in \(format == .webm ? "WebM" : "Matroska") is not played by iOS"
        case .mpegts:
            facts.unsupportedBecause = "MPEG transport streams are not attachments iOS plays"
        case .ogg, .flac:
            facts.unsupportedBecause = "\(video.isEmpty ? audio : video) in \(format.rawValue == "ogg" ? "Ogg" : "FLAC") is not played by iOS"
        case .jpeg, .png, .gif, .webp, .heic, .avif, .jxl:
            facts.unsupportedBecause = "an image, not a movie or sound"
        }
        return facts
    }
}
