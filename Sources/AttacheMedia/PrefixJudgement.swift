import AttachePayload

/// What the first bytes of a download say, judged against the limits while the rest is still
/// arriving (the fetch engine runs it once `Sniffer.prefixLength` bytes are in): anything Attache
/// cannot attach or convert stops here, and each kind gets its own byte cap.
extension MediaLimits {
    /// The format the bytes start as, and the most bytes worth receiving for it.
    /// With `transcode`, a movie or sound may be up to its `sourceBytes`: it can be made smaller.
    public func judge(prefix: [UInt8], transcode: TranscodeSettings? = nil) throws(MediaError) -> (format: MediaFormat, maxBytes: Int) {
        guard let format = Sniffer.sniff(prefix) else {
            let text = String(decoding: prefix.prefix(256), as: UTF8.self).lowercased()
            if text.contains("<html") || text.contains("<!doctype") {
                throw MediaError(.unsupportedType, "an HTML page, not media")
            }
            if text.hasPrefix("#extm3u") || text.hasPrefix("ffconcat") {
                throw MediaError(.unsupportedType, "a playlist, not media")
            }
            throw MediaError(.unsupportedType, "not a recognised media format")
        }
        switch format {
        case .jpeg, .png, .gif, .webp, .heic, .avif, .jxl:
            // Over the cap can still become a copy that fits (and the formats iOS does not show always
            // become one): take up to twice the cap.
            return (format, imageBytes * 2)
        default:
            // Movies and sounds are judged by probing: what cannot be played or converted is
            // refused there, with its codec named.
            return (format, max(byteCap(for: format.kind), transcode?.sourceBytes ?? 0))
        }
    }

    /// The most any download may be, before its first bytes say what it is.
    public func mostBytes(transcode: TranscodeSettings?) -> Int {
        max(videoBytes, imageBytes * 2, transcode?.sourceBytes ?? 0)
    }
}
