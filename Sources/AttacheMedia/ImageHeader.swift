import AttachePayload

/// What an image's header says, read without decoding a pixel, so limits hold before any
/// allocation the file could make us do.
public struct ImageHeader: Sendable, Equatable {
    public var format: MediaFormat
    /// Stored dimensions (before EXIF orientation).
    public var width: Int
    public var height: Int
    /// EXIF orientation 1–8 (1 when absent).
    public var orientation: Int
    public var progressive: Bool
    /// Animation frames (GIF), counted without decoding.
    public var frames: Int
    public var hasAlpha: Bool
    /// A progressive JPEG keeps DCT coefficients of the whole image until its last scan: what
    /// libjpeg would allocate for all of them, from the frame header (0 for anything else). A
    /// scaled decode keeps fewer (`ImageCodecs.keptCoefficientBytes`).
    public var coefficientBytes = 0

    /// Dimensions as shown, after orientation.
    public var displayWidth: Int { orientation >= 5 ? height : width }
    public var displayHeight: Int { orientation >= 5 ? width : height }

    public static func read(_ bytes: [UInt8], format: MediaFormat, limits: MediaLimits = MediaLimits()) throws(MediaError) -> ImageHeader {
        try withBytes(bytes) { (b) throws(MediaError) in try read(b, format: format, limits: limits) }
    }

    /// JPEG, PNG and GIF headers are read here; the formats Attache converts by their own library
    /// (which parses the container, not the pixels), with `limits` set on it.
    public static func read(_ bytes: UnsafeRawBufferPointer, format: MediaFormat, limits: MediaLimits = MediaLimits()) throws(MediaError) -> ImageHeader {
        switch format {
        case .jpeg: return try jpeg(bytes)
        case .png: return try png(bytes)
        case .gif: return try gif(bytes)
        case .webp, .heic, .avif, .jxl: return try ImageCodecs.info(bytes, format: format, limits: limits)
        default: throw MediaError(.unsupportedType, "\(format.rawValue) is not an image Attache can attach or convert")
        }
    }

    private static func u16be(_ b: UnsafeRawBufferPointer, _ i: Int) -> Int { Int(b[i]) << 8 | Int(b[i + 1]) }
    private static func u32be(_ b: UnsafeRawBufferPointer, _ i: Int) -> Int { Int(b[i]) << 24 | Int(b[i + 1]) << 16 | Int(b[i + 2]) << 8 | Int(b[i + 3]) }

    /// As libjpeg sizes its whole-image coefficient arrays: per component, 8×8 blocks of 16-bit
    /// coefficients, padded to whole MCUs.
    private static func coefficientBytes(_ b: UnsafeRawBufferPointer, segment: Int, length: Int, width: Int, height: Int) throws(MediaError) -> Int {
        let count = Int(b[segment + 5])
        guard count > 0, 6 + 3 * count <= length else { throw MediaError(.invalidMedia, "short SOF segment") }
        let factors = (0..<count).map { (Int(b[segment + 7 + 3 * $0]) >> 4, Int(b[segment + 7 + 3 * $0]) & 15) }
        guard factors.allSatisfy({ (1...4).contains($0.0) && (1...4).contains($0.1) }) else {
            throw MediaError(.invalidMedia, "JPEG sampling factors out of range")
        }
        let hMax = factors.map(\.0).max() ?? 1, vMax = factors.map(\.1).max() ?? 1
        func blocks(_ size: Int, _ factor: Int, _ most: Int) -> Int {
            let inBlocks = (size * factor + most * 8 - 1) / (most * 8)
            return (inBlocks + factor - 1) / factor * factor
        }
        return factors.reduce(0) { $0 + blocks(width, $1.0, hMax) * blocks(height, $1.1, vMax) * 64 * 2 }
    }

    static func jpeg(_ b: UnsafeRawBufferPointer) throws(MediaError) -> ImageHeader {
        var i = 2
        var orientation = 1
        while i + 4 <= b.count {
            guard b[i] == 0xFF else { throw MediaError(.invalidMedia, "JPEG marker expected at byte \(i)") }
            let marker = b[i + 1]
            if marker == 0xFF { i += 1; continue }  // fill byte
            if marker == 0xD8 || (0xD0...0xD7).contains(marker) || marker == 0x01 { i += 2; continue }
            let length = u16be(b, i + 2)
            guard length >= 2, i + 2 + length <= b.count else { throw MediaError(.invalidMedia, "truncated JPEG header") }
            let segment = i + 4
            if marker == 0xE1, length >= 8, Array(b[segment..<segment + 6]) == Array("Exif\0\0".utf8) {
                orientation = exifOrientation(Array(b[(segment + 6)..<(i + 2 + length)])) ?? 1
            }
            let sof: Set<UInt8> = [0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF]
            if sof.contains(marker) {
                guard length >= 8 else { throw MediaError(.invalidMedia, "short SOF segment") }
                let height = u16be(b, segment + 1), width = u16be(b, segment + 3)
                guard width > 0, height > 0 else { throw MediaError(.invalidMedia, "JPEG declares no pixels") }
                var header = ImageHeader(format: .jpeg, width: width, height: height, orientation: orientation,
                                         progressive: [0xC2, 0xC6, 0xCA, 0xCE].contains(marker), frames: 1, hasAlpha: false)
                if header.progressive {
                    header.coefficientBytes = try coefficientBytes(b, segment: segment, length: length - 2, width: width, height: height)
                }
                return header
            }
            if marker == 0xDA || marker == 0xD9 { break }
            i += 2 + length
        }
        throw MediaError(.invalidMedia, "JPEG has no frame header")
    }

    /// Orientation tag (0x0112) of IFD0 in a TIFF block.
    static func exifOrientation(_ t: [UInt8]) -> Int? {
        guard t.count >= 8 else { return nil }
        let little: Bool
        switch (t[0], t[1]) {
        case (0x49, 0x49): little = true
        case (0x4D, 0x4D): little = false
        default: return nil
        }
        func u16(_ i: Int) -> Int? {
            guard i >= 0, i + 2 <= t.count else { return nil }
            return little ? Int(t[i]) | Int(t[i + 1]) << 8 : Int(t[i]) << 8 | Int(t[i + 1])
        }
        func u32(_ i: Int) -> Int? {
            guard let a = u16(i), let b = u16(i + 2) else { return nil }
            return little ? a | b << 16 : a << 16 | b
        }
        guard let ifd = u32(4), let count = u16(ifd) else { return nil }
        for n in 0..<min(count, 512) {
            let entry = ifd + 2 + n * 12
            guard let tag = u16(entry) else { return nil }
            if tag == 0x0112, let value = u16(entry + 8), (1...8).contains(value) { return value }
        }
        return nil
    }

    static func png(_ b: UnsafeRawBufferPointer) throws(MediaError) -> ImageHeader {
        guard b.count >= 33, Array(b[12..<16]) == Array("IHDR".utf8) else { throw MediaError(.invalidMedia, "PNG without IHDR") }
        let width = u32be(b, 16), height = u32be(b, 20)
        let colorType = b[25]
        guard width > 0, height > 0 else { throw MediaError(.invalidMedia, "PNG declares no pixels") }
        var hasAlpha = colorType == 4 || colorType == 6
        var frames = 1
        // Walk chunk headers (not their data) up to the image data, for tRNS and APNG's acTL.
        var i = 8
        while i + 8 <= b.count {
            let length = u32be(b, i)
            let type = String(decoding: b[(i + 4)..<(i + 8)], as: UTF8.self)
            if type == "IDAT" { break }
            if type == "tRNS" { hasAlpha = true }
            if type == "acTL", i + 12 <= b.count { frames = max(1, u32be(b, i + 8)) }
            i += 12 + length
        }
        return ImageHeader(format: .png, width: width, height: height, orientation: 1, progressive: false, frames: frames, hasAlpha: hasAlpha)
    }

    /// Reads the logical screen and counts frames by walking the block structure.
    static func gif(_ b: UnsafeRawBufferPointer) throws(MediaError) -> ImageHeader {
        guard b.count >= 13 else { throw MediaError(.invalidMedia, "truncated GIF header") }
        let width = Int(b[6]) | Int(b[7]) << 8, height = Int(b[8]) | Int(b[9]) << 8
        guard width > 0, height > 0 else { throw MediaError(.invalidMedia, "GIF declares no pixels") }
        var i = 13
        if b[10] & 0x80 != 0 { i += 3 << (Int(b[10] & 7) + 1) }
        var frames = 0
        var transparency = false
        func skipSubBlocks(_ start: Int) -> Int {
            var j = start
            while j < b.count {
                let n = Int(b[j])
                j += 1 + n
                if n == 0 { break }
            }
            return j
        }
        scan: while i < b.count {
            switch b[i] {
            case 0x2C:  // image descriptor
                frames += 1
                guard i + 10 <= b.count else { break scan }
                var j = i + 10
                if b[i + 9] & 0x80 != 0 { j += 3 << (Int(b[i + 9] & 7) + 1) }
                i = skipSubBlocks(j + 1)  // past the LZW minimum code size
            case 0x21:  // extension
                if i + 3 < b.count, b[i + 1] == 0xF9, b[i + 2] >= 4, b[i + 3] & 1 != 0 { transparency = true }
                i = skipSubBlocks(i + 2)
            case 0x3B:
                break scan
            default:
                break scan  // garbage; the decoder, which reads every frame, rejects it
            }
        }
        guard frames > 0 else { throw MediaError(.invalidMedia, "GIF has no image") }
        return ImageHeader(format: .gif, width: width, height: height, orientation: 1, progressive: false, frames: frames, hasAlpha: transparency)
    }
}
