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

    private static func string<T>(_ tuple: T) -> String {
        withUnsafeBytes(of: tuple) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    }

    /// Opens the bytes with the named demuxer and lets `decide` judge the facts: it throws to
    /// refuse (before any decoding), returns nil when no frame is wanted, or asks for a poster.
    static func examine(
        _ bytes: UnsafeRawBufferPointer, demuxer: String, maxPixels: Int, maxStreams: Int, abort: AbortFlag,
        decide: (RawMediaFacts) throws -> PosterRequest?
    ) throws -> (facts: RawMediaFacts, poster: Pixels?, shownAt: Double) {
        try demuxer.withCString { demuxerName in
            var options = attache_media_options()
            options.demuxer = demuxerName
            options.max_pixels = Int64(maxPixels)
            options.max_streams = Int32(maxStreams)
            options.abort_context = Unmanaged.passUnretained(abort).toOpaque()
            options.abort_fn = { context in
                guard let context else { return 0 }
                return Unmanaged<AbortFlag>.fromOpaque(context).takeUnretainedValue().isSet ? 1 : 0
            }
            defer { withExtendedLifetime(abort) {} }
            do {
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
                    streams: Int(raw.streams)
                )
                guard let poster = try decide(facts) else { return (facts, nil, 0) }
                var image = attache_image()
                var shownAt = 0.0
                try check(attache_media_poster(handle, poster.time ?? -1, poster.exact ? 1 : 0, Int32(poster.maxFrames),
                                               Int32(poster.maxEdge), &image, &shownAt), &options, what: "poster")
                return (facts, Pixels(image), shownAt)
            }
        }
    }
}
