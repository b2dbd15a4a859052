// The one Swift file that calls CVideoCodecs (FFmpeg).
internal import CImageCodecs
internal import CVideoCodecs
import AttacheSupport

/// What FFmpeg says of a file, before any verdict.
struct RawMediaFacts {
    var container: String
    var videoCodec: String?
    var audioCodec: String?
    var width: Int
    var height: Int
    var rotation: Int
    var duration: Double
    var frameRate: Double?
    var bitRate: Int?
    var hasVideo: Bool
    var hasAudio: Bool
    var hasCover: Bool
    var streams: Int
    var channels: Int
    var sampleRate: Int
}

struct PosterRequest {
    /// Seconds into the clip; nil for cover art if there is one, else the start.
    var time: Double?
    var exact: Bool
    var maxFrames: Int
    var maxEdge: Int
}

enum VideoCodecs {
    /// FFmpeg's libraries, loaded now (they are otherwise loaded by the first movie).
    static func load() throws {
        var message = [CChar](repeating: 0, count: 160)
        guard attache_video_load(&message, message.count) != 0 else {
            throw MediaError(.unsupportedType, String(cBuffer: message))
        }
    }

    private static func check(_ status: attache_status, _ options: inout attache_media_options, what: String) throws {
        let message = withUnsafeBytes(of: &options.message) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        switch status {
        case ATTACHE_OK: return
        case ATTACHE_ERR_ABORTED: throw CancellationError()
        case ATTACHE_ERR_LIMITS, ATTACHE_ERR_NOMEM: throw MediaError(.limitsExceeded, "\(what): \(message)")
        case ATTACHE_ERR_UNSUPPORTED: throw MediaError(.unsupportedType, "\(what): \(message)")
        default: throw MediaError(.invalidMedia, "\(what): \(message.isEmpty ? "corrupt data" : message)")
        }
    }

    /// A NUL-terminated C char array (a fixed-size field of a C struct) as a String.
    static func string<T>(_ tuple: T) -> String {
        withUnsafeBytes(of: tuple) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    }

    /// Opens the bytes with the named demuxer and lets `decide` judge the facts: it throws to
    /// refuse (before any decoding), returns nil when no frame is wanted, or asks for a poster.
    static func examine(
        _ bytes: UnsafeRawBufferPointer, demuxer: String, maxPixels: Int, maxStreams: Int, abort: AbortFlag,
        decide: (RawMediaFacts) throws -> PosterRequest?
    ) throws -> (facts: RawMediaFacts, poster: Pixels?, shownAt: Double) {
        try open(bytes, demuxer: demuxer, maxPixels: maxPixels, maxStreams: maxStreams, abort: abort) { handle, facts, options in
            guard let poster = try decide(facts) else { return (facts, nil, 0) }
            var image = attache_image()
            var shownAt = 0.0
            try check(attache_media_poster(handle, poster.time ?? -1, poster.exact ? 1 : 0, Int32(poster.maxFrames),
                                           Int32(poster.maxEdge), &image, &shownAt), &options, what: "poster")
            return (facts, Pixels(image), shownAt)
        }
    }

    /// Opens the bytes and writes them as MP4 (M4A for a sound) by the plan `decide` makes from
    /// the facts (nil: nothing to write).
    static func transcode(
        _ bytes: UnsafeRawBufferPointer, demuxer: String, maxPixels: Int, maxStreams: Int, abort: AbortFlag,
        decide: (RawMediaFacts) throws -> TranscodePlan?
    ) throws -> (facts: RawMediaFacts, output: TranscodeOutput?) {
        try open(bytes, demuxer: demuxer, maxPixels: maxPixels, maxStreams: maxStreams, abort: abort) { handle, facts, options in
            guard let plan = try decide(facts) else { return (facts, nil) }
            var out = attache_transcoded()
            try plan.withC { plan in
                try check(attache_media_transcode(handle, plan, &out), &options, what: "transcode")
            }
            defer { attache_transcoded_free(&out) }
            return (facts, TranscodeOutput(out))
        }
    }

    /// The H.264 encoder this FFmpeg has, if any.
    static func h264Encoder() -> String? {
        var name = [CChar](repeating: 0, count: 32)
        guard attache_h264_encoder(&name, name.count) != 0 else { return nil }
        return String(cBuffer: name)
    }

    private static func open<T>(
        _ bytes: UnsafeRawBufferPointer, demuxer: String, maxPixels: Int, maxStreams: Int, abort: AbortFlag,
        _ body: (OpaquePointer?, RawMediaFacts, inout attache_media_options) throws -> T
    ) throws -> T {
        try demuxer.withCString { demuxerName in
            var options = attache_media_options()
            options.demuxer = demuxerName
            options.max_pixels = Int64(maxPixels)
            options.max_streams = Int32(maxStreams)
            options.abort_context = Unmanaged.passUnretained(abort).toOpaque()
            options.abort_fn = abortCallback
            defer { withExtendedLifetime(abort) {} }
            var handle: OpaquePointer?
            var raw = attache_media_facts()
            let data = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self)
            try check(attache_media_open(data, bytes.count, &options, &handle, &raw), &options, what: "probe")
            defer { attache_media_close(handle) }
            let facts = RawMediaFacts(
                container: string(raw.container),
                videoCodec: raw.has_video != 0 ? string(raw.video_codec) : nil,
                audioCodec: raw.has_audio != 0 ? string(raw.audio_codec) : nil,
                width: Int(raw.width), height: Int(raw.height), rotation: Int(raw.rotation),
                duration: raw.duration, frameRate: raw.frame_rate > 0 ? raw.frame_rate : nil,
                bitRate: raw.bit_rate > 0 ? Int(raw.bit_rate) : nil,
                hasVideo: raw.has_video != 0, hasAudio: raw.has_audio != 0, hasCover: raw.has_cover != 0,
                streams: Int(raw.streams), channels: Int(raw.channels), sampleRate: Int(raw.sample_rate)
            )
            return try body(handle, facts, &options)
        }
    }

    private static let abortCallback: attache_abort_fn = { context in
        guard let context else { return 0 }
        return Unmanaged<AbortFlag>.fromOpaque(context).takeUnretainedValue().isSet ? 1 : 0
    }

    /// An H.264 movie from frames the caller decoded (an animation), each shown for its time.
    final class MovieWriter {
        private var writer: OpaquePointer?
        private var options = attache_media_options()
        private let abort: AbortFlag

        init(plan: TranscodePlan, abort: AbortFlag) throws {
            self.abort = abort
            options.abort_context = Unmanaged.passUnretained(abort).toOpaque()
            options.abort_fn = VideoCodecs.abortCallback
            var handle: OpaquePointer?
            try plan.withC { plan in
                try VideoCodecs.check(attache_movie_writer_open(plan, &options, &handle), &options, what: "movie")
            }
            writer = handle
        }

        deinit { attache_movie_writer_free(writer) }

        func add(_ frame: Pixels, milliseconds: Int) throws {
            try frame.withImage { image in
                try VideoCodecs.check(attache_movie_writer_add(writer, image, Int32(clamping: milliseconds)), &options, what: "movie")
            }
        }

        /// `playing`: written again after itself until it plays at least this long (see
        /// attache_movie_writer_finish).
        func finish(playing: Double) throws -> TranscodeOutput {
            var out = attache_transcoded()
            try VideoCodecs.check(attache_movie_writer_finish(writer, playing, &out), &options, what: "movie")
            defer { attache_transcoded_free(&out) }
            return TranscodeOutput(out)
        }
    }
}

/// How attache_media_transcode is to write a file (see attache_video.h).
struct TranscodePlan: Equatable {
    enum Mode: Int32 {
        case drop = 0, copy = 1, encode = 2
    }

    var video: Mode
    var audio: Mode
    var width = 0
    var height = 0
    var crf = 23
    var maxRate = 0
    var bufferSize = 0
    var maxFPS = 60.0
    /// What the encoder plans its rate for (0: maxFPS).
    var frameRate = 0.0
    var audioRate = 128_000
    var sampleRate = 48_000
    var channels = 2
    var maxSeconds = 0.0
    /// The movie length limit, held on the packets' times as they are read (0: none).
    var limitSeconds = 0.0
    var maxBytes: Int
    var threads = 0
    var preset = "veryfast"

    func withC<T>(_ body: (UnsafePointer<attache_transcode_plan>) throws -> T) rethrows -> T {
        try preset.withCString { preset in
            var plan = attache_transcode_plan()
            plan.video = video.rawValue
            plan.audio = audio.rawValue
            plan.width = Int32(width)
            plan.height = Int32(height)
            plan.crf = Int32(crf)
            plan.max_rate = Int64(maxRate)
            plan.buf_size = Int64(bufferSize)
            plan.max_fps = maxFPS
            plan.frame_rate = frameRate
            plan.audio_rate = Int32(audioRate)
            plan.sample_rate = Int32(sampleRate)
            plan.channels = Int32(channels)
            plan.max_seconds = maxSeconds
            plan.limit_seconds = limitSeconds
            plan.max_bytes = Int64(maxBytes)
            plan.threads = Int32(threads)
            plan.preset = preset
            return try withUnsafePointer(to: &plan) { try body($0) }
        }
    }
}

/// What attache_media_transcode wrote.
struct TranscodeOutput {
    var bytes: [UInt8]
    var duration: Double
    var width: Int
    var height: Int
    var frames: Int
    /// Times an animation is written one after the other.
    var loops: Int
    var videoEncoder: String?
    var audioEncoder: String?

    fileprivate init(_ out: attache_transcoded) {
        bytes = out.data.map { Array(UnsafeBufferPointer(start: $0, count: out.length)) } ?? []
        duration = out.duration
        width = Int(out.width)
        height = Int(out.height)
        frames = Int(out.video_frames)
        loops = max(1, Int(out.loops))
        videoEncoder = VideoCodecs.string(out.video_encoder).nilIfEmpty
        audioEncoder = VideoCodecs.string(out.audio_encoder).nilIfEmpty
    }
}

private extension String {
    var nilIfEmpty: String? { isEmpty ? nil : self }
}
