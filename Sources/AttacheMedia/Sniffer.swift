import AttachePayload

/// A file's format from its first bytes.
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
