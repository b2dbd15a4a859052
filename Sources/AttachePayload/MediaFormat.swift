/// What a media file is for a device: a picture, a movie, a sound.
public enum MediaKind: String, Sendable, Hashable {
    case image, video, audio
}

/// A container format, recognised by its magic bytes — never by Content-Type or extension.
public enum MediaFormat: String, Sendable, Hashable, CaseIterable {
    case jpeg, png, gif, webp, heic, avif, jxl, mp4, mov, m4a, avi, mpeg, mpegts, webm, mkv, mp3, wav, aiff, ogg, flac

    public var kind: MediaKind {
        switch self {
        case .jpeg, .png, .gif, .webp, .heic, .avif, .jxl: return .image
        case .mp4, .mov, .avi, .mpeg, .mpegts, .webm, .mkv: return .video
        case .m4a, .mp3, .wav, .aiff, .ogg, .flac: return .audio
        }
    }

    /// The uniform type identifier iOS expects as a type hint.
    public var uti: String {
        switch self {
        case .jpeg: return "public.jpeg"
        case .png: return "public.png"
        case .gif: return "com.compuserve.gif"
        case .webp: return "org.webmproject.webp"
        case .heic: return "public.heic"
        case .avif: return "public.avif"
        case .jxl: return "public.jpeg-xl"
        case .mp4: return "public.mpeg-4"
        case .mov: return "com.apple.quicktime-movie"
        case .m4a: return "com.apple.m4a-audio"
        case .avi: return "public.avi"
        case .mpeg: return "public.mpeg"
        case .mpegts: return "public.mpeg-2-transport-stream"
        case .webm: return "org.webmproject.webm"
        case .mkv: return "org.matroska.mkv"
        case .mp3: return "public.mp3"
        case .wav: return "com.microsoft.waveform-audio"
        case .aiff: return "public.aiff-audio"
        case .ogg: return "org.xiph.ogg"
        case .flac: return "org.xiph.flac"
        }
    }

    /// The MIME type, for the payloads that name media by one (Batch's `at.t` may).
    public var mimeType: String {
        switch self {
        case .jpeg: return "image/jpeg"
        case .png: return "image/png"
        case .gif: return "image/gif"
        case .webp: return "image/webp"
        case .heic: return "image/heic"
        case .avif: return "image/avif"
        case .jxl: return "image/jxl"
        case .mp4: return "video/mp4"
        case .mov: return "video/quicktime"
        case .m4a: return "audio/mp4"
        case .avi: return "video/x-msvideo"
        case .mpeg: return "video/mpeg"
        case .mpegts: return "video/mp2t"
        case .webm: return "video/webm"
        case .mkv: return "video/x-matroska"
        case .mp3: return "audio/mpeg"
        case .wav: return "audio/wav"
        case .aiff: return "audio/aiff"
        case .ogg: return "audio/ogg"
        case .flac: return "audio/flac"
        }
    }

    public var fileExtension: String {
        switch self {
        case .jpeg: return "jpg"
        case .mpegts: return "ts"
        case .mpeg: return "mpg"
        case .aiff: return "aiff"
        default: return rawValue
        }
    }

    /// Formats iOS shows as notification attachments (UNNotificationAttachment).
    public var isSupportedByIOS: Bool {
        switch self {
        case .jpeg, .png, .gif, .mp4, .mov, .m4a, .avi, .mpeg, .mp3, .wav, .aiff: return true
        case .webp, .heic, .avif, .jxl, .webm, .mkv, .mpegts, .ogg, .flac: return false
        }
    }

    /// Images iOS does not show that Attache decodes and converts (to JPEG, PNG or GIF).
    public var isConvertedForIOS: Bool {
        switch self {
        case .webp, .heic, .avif, .jxl: return true
        default: return false
        }
    }
}
