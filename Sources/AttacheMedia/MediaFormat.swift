public enum MediaKind: String, Sendable {
    case image, video, audio
}

/// A container format, recognised by its magic bytes — never by Content-Type or extension.
public enum MediaFormat: String, Sendable, CaseIterable {
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

public enum Sniffer {
    /// How many leading bytes `sniff` wants to see.
    public static let prefixLength = 512

    public static func sniff(_ data: some Collection<UInt8>) -> MediaFormat? {
        let b = Array(data.prefix(prefixLength))
        func at(_ offset: Int, _ bytes: [UInt8]) -> Bool {
            b.count >= offset + bytes.count && Array(b[offset..<offset + bytes.count]) == bytes
        }
        func ascii(_ offset: Int, _ text: String) -> Bool { at(offset, Array(text.utf8)) }

        if at(0, [0xFF, 0xD8, 0xFF]) { return .jpeg }
        if at(0, [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if ascii(0, "GIF87a") || ascii(0, "GIF89a") { return .gif }
        if ascii(0, "RIFF") && ascii(8, "WEBP") { return .webp }
        if at(0, [0xFF, 0x0A]) || at(0, [0, 0, 0, 0x0C]) && ascii(4, "JXL ") && at(8, [0x0D, 0x0A, 0x87, 0x0A]) { return .jxl }  // codestream, container
        if ascii(0, "RIFF") && ascii(8, "AVI ") { return .avi }
        if ascii(0, "RIFF") && ascii(8, "WAVE") { return .wav }
        if ascii(0, "FORM") && (ascii(8, "AIFF") || ascii(8, "AIFC")) { return .aiff }
        if at(0, [0x1A, 0x45, 0xDF, 0xA3]) { return docType(b) == "webm" ? .webm : .mkv }  // EBML: WebM or Matroska
        if at(0, [0x00, 0x00, 0x01, 0xBA]) { return .mpeg }
        if ascii(0, "OggS") { return .ogg }  // Opus, Vorbis, FLAC (or Theora) in Ogg
        if ascii(0, "fLaC") { return .flac }
        if b.count >= 377 && b[0] == 0x47 && b[188] == 0x47 && b[376] == 0x47 { return .mpegts }  // 188-byte packets
        if ascii(4, "ftyp") { return isoBrand(b) }
        if ascii(0, "ID3") { return .mp3 }
        if b.count >= 2 && b[0] == 0xFF && (b[1] & 0xE0) == 0xE0 && (b[1] & 0x06) != 0 { return .mp3 }  // MPEG audio frame sync
        if ascii(4, "moov") || ascii(4, "mdat") || ascii(4, "wide") || ascii(4, "free") { return .mov }
        return nil
    }

    /// An EBML header's DocType (`webm`, `matroska`): the element 0x4282, its one-byte size, its
    /// text. Nil when the header does not say within the prefix (read as Matroska, the general one).
    private static func docType(_ b: [UInt8]) -> String? {
        let header = b.prefix(64)
        guard let at = header.indices.first(where: { $0 + 2 < header.endIndex && header[$0] == 0x42 && header[$0 + 1] == 0x82 }) else {
            return nil
        }
        let size = Int(header[at + 2])
        guard size & 0x80 != 0 else { return nil }  // a one-byte size, as every muxer writes it
        let length = size & 0x7F, start = at + 3
        guard start + length <= b.count else { return nil }
        return String(decoding: b[start..<start + length], as: UTF8.self)
    }

    private static func isoBrand(_ b: [UInt8]) -> MediaFormat? {
        guard b.count >= 12 else { return nil }
        let size = Int(b[0]) << 24 | Int(b[1]) << 16 | Int(b[2]) << 8 | Int(b[3])
        var brands: [String] = [String(decoding: b[8..<12], as: UTF8.self)]
        var offset = 16
        while offset + 4 <= min(size, b.count) {
            brands.append(String(decoding: b[offset..<offset + 4], as: UTF8.self))
            offset += 4
        }
        let major = brands[0]
        if ["avif", "avis"].contains(major) { return .avif }
        if ["heic", "heix", "hevc", "hevx", "heim", "heis", "mif1", "msf1"].contains(major) {
            return brands.contains("avif") ? .avif : .heic
        }
        if major == "qt  " { return .mov }
        if ["M4A ", "M4B ", "M4P "].contains(major) { return .m4a }
        return .mp4
    }
}
