// The one Swift file that calls CImageCodecs (libjpeg-turbo, libpng, giflib, libwebp, libheif,
// libavif, libjxl and pixel ops).
internal import CImageCodecs
import AttachePayload
import AttacheSupport
#if canImport(Glibc)
import Glibc
#endif

/// An 8-bit RGB or premultiplied-RGBA image owned by C memory, freed with its owner.
final class Pixels {
    fileprivate var image: attache_image
    /// The source's RGB colour profile, carried into every copy made from these pixels.
    var icc: [UInt8]?

    /// Takes ownership of an image a C decoder allocated.
    init(_ image: attache_image) {
        self.image = image
    }

    /// Copies 8-bit samples, `channels` per pixel, row by row (synthetic images for tests).
    convenience init(width: Int, height: Int, channels: Int, samples: [UInt8]) {
        precondition(width > 0 && height > 0 && (1...4).contains(channels) && samples.count == width * height * channels)
        let buffer = malloc(samples.count)!.assumingMemoryBound(to: UInt8.self)
        buffer.initialize(from: samples, count: samples.count)
        self.init(attache_image(pixels: buffer, width: Int32(width), height: Int32(height), channels: Int32(channels)))
    }

    deinit {
        attache_image_free(&image)
    }

    var width: Int { Int(image.width) }
    var height: Int { Int(image.height) }
    var hasAlpha: Bool { image.channels == 4 }

    /// Straight (not premultiplied) RGBA samples, row by row: for the placeholder hash.
    func straightRGBA() -> [UInt8] {
        let c = Int(image.channels), count = width * height
        var out = [UInt8](repeating: 255, count: count * 4)
        for i in 0..<count {
            let alpha = c == 4 ? Int(image.pixels[i * 4 + 3]) : 255
            for k in 0..<3 {
                let v = Int(image.pixels[i * c + k])
                out[i * 4 + k] = alpha == 0 ? 0 : UInt8(min(255, (v * 255 + alpha / 2) / alpha))
            }
            out[i * 4 + 3] = UInt8(alpha)
        }
        return out
    }

    /// The C image, for an encoder that reads it (and keeps no pointer to it).
    func withImage<T>(_ body: (UnsafePointer<attache_image>) throws -> T) rethrows -> T {
        try withUnsafePointer(to: &image) { try body($0) }
    }

    /// Every sample, row by row (for tests).
    var samples: [UInt8] { Array(UnsafeBufferPointer(start: image.pixels, count: width * height * Int(image.channels))) }

    /// One pixel's channel values (for tests and diagnostics).
    func channelValues(x: Int, y: Int) -> [Int] {
        let c = Int(image.channels)
        let offset = (y * width + x) * c
        return (0..<c).map { Int(image.pixels[offset + $0]) }
    }
}

/// How a decode is to be done: the reductions applied while rows stream out of the decoder.
struct DecodePlan {
    /// JPEG: the IDCT makes the image n/8 of its size (8: full size).
    var jpegScaleEighths = 8
    var boxShrink = 1
    /// JPEG with several scans: libjpeg's own buffer of every coefficient, instead of the store
    /// that keeps the values the scaled IDCT reads (coefficients.c). Only as the reference that
    /// store is tested against: the decoded pixels are the same.
    var jpegKeepsAllCoefficients = false

    /// A JPEG edge of `edge` pixels as libjpeg scales it (rounded up).
    func jpegScaled(_ edge: Int, eighths: Int? = nil) -> Int { (edge * (eighths ?? jpegScaleEighths) + 7) / 8 }
}

enum ImageCodecs {
    /// libheif, libavif and libjxl, loaded now rather than on first use.
    static func loadLibraries() throws {
        var message = [CChar](repeating: 0, count: 160)
        guard attache_codecs_preload(&message, message.count) != 0 else {
            throw MediaError(.unsupportedType, String(cBuffer: message))
        }
    }

    /// Bytes of a progressive JPEG's coefficients the decoder holds with this plan, from the
    /// header's count of all of them (128 bytes a block).
    static func keptCoefficientBytes(_ header: ImageHeader, plan: DecodePlan) -> Int {
        let perBlock = plan.jpegKeepsAllCoefficients ? 128 : attache_jpeg_coefficient_block_bytes(Int32(plan.jpegScaleEighths))
        return header.coefficientBytes / 128 * perBlock
    }

    private static func check(_ status: attache_status, _ message: String, what: String) throws -> Void {
        switch status {
        case ATTACHE_OK: return
        case ATTACHE_ERR_LIMITS: throw MediaError(.limitsExceeded, "\(what): \(message)")
        case ATTACHE_ERR_ABORTED: throw CancellationError()
        case ATTACHE_ERR_UNSUPPORTED: throw MediaError(.unsupportedType, "\(what): \(message)")
        case ATTACHE_ERR_NOMEM: throw MediaError(.limitsExceeded, "\(what): out of memory")
        default: throw MediaError(.invalidMedia, "\(what): \(message.isEmpty ? "corrupt data" : message)")
        }
    }

    private static func message(_ options: inout attache_decode_options) -> String {
        withUnsafeBytes(of: &options.message) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    }

    /// The options every decoder takes; `abort` must outlive their use (the C code holds it unretained).
    private static func decodeOptions(plan: DecodePlan, limits: MediaLimits, abort: AbortFlag) -> attache_decode_options {
        var options = attache_decode_options()
        options.scale_eighths = Int32(plan.jpegScaleEighths)
        options.keep_all_coefficients = plan.jpegKeepsAllCoefficients ? 1 : 0
        options.shrink = Int32(plan.boxShrink)
        options.max_pixels = UInt64(limits.maxPixels)
        options.max_memory = limits.maxDecoderMemory
        options.max_scans = Int32(limits.maxProgressiveScans)
        options.max_frames = Int32(clamping: limits.maxGIFFrames)
        options.abort_context = Unmanaged.passUnretained(abort).toOpaque()
        options.abort_fn = { context in
            guard let context else { return 0 }
            return Unmanaged<AbortFlag>.fromOpaque(context).takeUnretainedValue().isSet ? 1 : 0
        }
        return options
    }

    /// The ICC profile a decoder found (freeing its copy), kept only when it describes RGB: a grey
    /// or CMYK profile does not fit the RGB pixels Attache makes.
    private static func takeProfile(_ options: inout attache_decode_options) -> [UInt8]? {
        defer {
            attache_buffer_free(options.icc)
            options.icc = nil
            options.icc_length = 0
        }
        guard let icc = options.icc, attache_icc_is_rgb(icc, options.icc_length) != 0 else { return nil }
        return Array(UnsafeBufferPointer(start: icc, count: options.icc_length))
    }

    /// The decoder of a still format.
    private static func decoder(_ format: MediaFormat) -> attache_decode_fn? {
        switch format {
        case .jpeg: attache_jpeg_decode
        case .png: attache_png_decode
        case .gif: attache_gif_decode
        case .webp: attache_webp_decode
        case .heic: attache_heif_decode
        case .avif: attache_avif_decode
        case .jxl: attache_jxl_decode
        default: nil
        }
    }

    static func decode(_ bytes: UnsafeRawBufferPointer, format: MediaFormat, plan: DecodePlan, limits: MediaLimits, abort: AbortFlag) throws -> Pixels {
        try decode(bytes, format: format, plan: plan, limits: limits, abort: abort, fitting: nil).decoded
    }

    /// Decodes and, when `edge` is given, resamples the decoded pixels to fit it on a second
    /// thread while the decode runs (attache_decode_resized): `fitted` is nil when they already fit.
    /// `mapped`: the bytes are a read-only file mapping, given back as they are read.
    static func decode(_ bytes: UnsafeRawBufferPointer, format: MediaFormat, plan: DecodePlan, limits: MediaLimits, abort: AbortFlag,
                       fitting edge: Int?, mapped: Bool = false) throws -> (decoded: Pixels, fitted: Pixels?) {
        let (decoded, fitted) = try decode(bytes, format: format, plan: plan, limits: limits, abort: abort, fitting: edge,
                                           extras: nil, mapped: mapped)
        guard let decoded else { throw MediaError(.invalidMedia, "\(format.rawValue): the decoder made no image") }
        return (decoded, fitted)
    }

    /// A decode with its display copy (`fitted`, nil when the decoded pixels already fit), and what
    /// the thread that resamples the copy made of its rows as they were final: `thumbnail`, the
    /// copy resampled to fit `thumbnailEdge` (when asked, and smaller than the copy), and `encoded`,
    /// the copy as JPEG at `jpegQuality` (when asked, and RGB). Each is what resize and encode
    /// would make of the finished copy; nil ones are for the caller to make. Without
    /// `keepDecoded`, `decoded` is nil when the decoder kept only a ring of rows for the resample
    /// (attache_display_extras.ring_rows): never when the decoded pixels already fit.
    struct DisplayDecode {
        let decoded: Pixels?
        let fitted: Pixels?
        let thumbnail: Pixels?
        let encoded: [UInt8]?
    }

    static func decode(_ bytes: UnsafeRawBufferPointer, format: MediaFormat, plan: DecodePlan, limits: MediaLimits, abort: AbortFlag,
                       fitting edge: Int, thumbnailEdge: Int?, jpegQuality: Int?, keepDecoded: Bool = true,
                       ringRows: Int = 64, mapped: Bool = false) throws -> DisplayDecode {
        var extras = attache_display_extras()
        extras.thumbnail_edge = Int32(clamping: thumbnailEdge ?? 0)
        extras.jpeg_quality = Int32(clamping: jpegQuality ?? 0)
        extras.ring_rows = keepDecoded ? 0 : Int32(clamping: ringRows)
        let (decoded, fitted) = try decode(bytes, format: format, plan: plan, limits: limits, abort: abort, fitting: edge,
                                           extras: &extras, mapped: mapped)
        defer { attache_buffer_free(extras.jpeg) }
        guard let source = decoded ?? fitted else { throw MediaError(.invalidMedia, "\(format.rawValue): the decoder made no image") }
        return DisplayDecode(decoded: decoded, fitted: fitted,
                             thumbnail: extras.thumbnail.pixels == nil ? nil : derived(extras.thumbnail, from: source),
                             encoded: extras.jpeg.map { Array(UnsafeBufferPointer(start: $0, count: extras.jpeg_length)) })
    }

    private static func decode(_ bytes: UnsafeRawBufferPointer, format: MediaFormat, plan: DecodePlan, limits: MediaLimits,
                               abort: AbortFlag, fitting edge: Int?, extras: UnsafeMutablePointer<attache_display_extras>?,
                               mapped: Bool) throws -> (decoded: Pixels?, fitted: Pixels?) {
        var options = decodeOptions(plan: plan, limits: limits, abort: abort)
        options.release_behind = mapped ? 1 : 0
        var out = attache_image()
        var resized = attache_image()
        let data = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self)
        let status: attache_status
        if let decode = decoder(format) {
            if let edge {
                status = attache_decode_resized(decode, data, bytes.count, &options, Int32(clamping: edge), &out, &resized, extras)
            } else {
                status = decode(data, bytes.count, &options, &out)
            }
        } else {
            status = ATTACHE_ERR_UNSUPPORTED
        }
        withExtendedLifetime(abort) {}
        let icc = takeProfile(&options)
        try check(status, message(&options), what: format.rawValue)
        let fitted = resized.pixels == nil ? nil : Pixels(resized)
        fitted?.icc = icc
        guard out.pixels != nil else { return (nil, fitted) }  // a ring was kept, not the image
        let pixels = Pixels(out)
        pixels.icc = icc
        return (pixels, fitted)
    }

    /// What the library of a converted format reads from its header: size, frames, alpha.
    static func info(_ bytes: UnsafeRawBufferPointer, format: MediaFormat, limits: MediaLimits) throws(MediaError) -> ImageHeader {
        var options = decodeOptions(plan: DecodePlan(), limits: limits, abort: AbortFlag())
        var info = attache_image_info()
        let data = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self)
        let status: attache_status
        switch format {
        case .webp: status = attache_webp_info(data, bytes.count, &options, &info)
        case .heic: status = attache_heif_info(data, bytes.count, &options, &info)
        case .avif: status = attache_avif_info(data, bytes.count, &options, &info)
        case .jxl: status = attache_jxl_info(data, bytes.count, &options, &info)
        default: status = ATTACHE_ERR_UNSUPPORTED
        }
        _ = takeProfile(&options)
        do {
            try check(status, message(&options), what: format.rawValue)
        } catch let error as MediaError {
            throw error
        } catch {
            throw MediaError(.invalidMedia, "\(format.rawValue): \(error)")
        }
        return ImageHeader(format: format, width: Int(info.width), height: Int(info.height), orientation: max(1, Int(info.orientation)),
                           progressive: false, frames: max(1, Int(info.frames)), hasAlpha: info.has_alpha != 0)
    }

    /// The frames of an animated WebP, AVIF or GIF, one at a time, composited.
    final class Frames {
        private var frames: OpaquePointer?
        private var options: attache_decode_options
        private let abort: AbortFlag
        private let format: MediaFormat
        private(set) var icc: [UInt8]?

        init(_ bytes: UnsafeRawBufferPointer, format: MediaFormat, plan: DecodePlan, limits: MediaLimits, abort: AbortFlag) throws {
            self.abort = abort
            self.format = format
            options = decodeOptions(plan: plan, limits: limits, abort: abort)
            let data = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self)
            let status: attache_status
            switch format {
            case .webp: status = attache_webp_frames_open(data, bytes.count, &options, &frames)
            case .avif: status = attache_avif_frames_open(data, bytes.count, &options, &frames)
            case .gif: status = attache_gif_frames_open(data, bytes.count, &options, &frames)
            default: status = ATTACHE_ERR_UNSUPPORTED
            }
            icc = takeProfile(&options)
            try check(status, message(&options), what: format.rawValue)
        }

        deinit {
            attache_frames_close(frames)
        }

        /// The next frame and how long it shows, in milliseconds; nil after the last.
        func next() throws -> (pixels: Pixels, milliseconds: Int)? {
            var out = attache_image()
            var duration: Int32 = 0
            let status = withExtendedLifetime(abort) { attache_frames_next(frames, &options, &out, &duration) }
            let text = message(&options)
            if status == ATTACHE_ERR_INVALID && text.isEmpty { return nil }
            try check(status, text, what: format.rawValue)
            let pixels = Pixels(out)
            pixels.icc = icc
            return (pixels, Int(duration))
        }
    }

    /// An animated GIF, frame by frame (see attache_gif_writer).
    final class GIFWriter {
        private let writer: OpaquePointer

        init(width: Int, height: Int) throws {
            guard let writer = attache_gif_writer_new(Int32(width), Int32(height)) else {
                throw MediaError(.limitsExceeded, "a \(width)x\(height) GIF cannot be made")
            }
            self.writer = writer
        }

        deinit {
            attache_gif_writer_free(writer)
        }

        var byteCount: Int { attache_gif_writer_size(writer) }

        func add(_ pixels: Pixels, centiseconds: Int) throws {
            var text = [CChar](repeating: 0, count: 160)
            try check(attache_gif_writer_add(writer, &pixels.image, Int32(clamping: centiseconds), &text), String(cBuffer: text), what: "gif")
        }

        func finish() throws -> [UInt8] {
            var buffer: UnsafeMutablePointer<UInt8>?
            var length = 0
            var text = [CChar](repeating: 0, count: 160)
            let status = attache_gif_writer_finish(writer, &buffer, &length, &text)
            defer { attache_buffer_free(buffer) }
            try check(status, String(cBuffer: text), what: "gif")
            guard let buffer else { throw MediaError(.invalidMedia, "the GIF writer produced nothing") }
            return Array(UnsafeBufferPointer(start: buffer, count: length))
        }
    }

    /// The size within `edge` pixels that every copy is resampled to (attache_fit_size: the
    /// resampler beside a decode picks it in C, so there is one definition).
    static func fit(width: Int, height: Int, edge: Int) -> (width: Int, height: Int) {
        var w: Int32 = 0, h: Int32 = 0
        attache_fit_size(Int32(clamping: width), Int32(clamping: height), Int32(clamping: edge), &w, &h)
        return (Int(w), Int(h))
    }

    static func resize(_ pixels: Pixels, width: Int, height: Int) throws -> Pixels {
        var out = attache_image()
        try check(attache_resize(&pixels.image, Int32(width), Int32(height), &out), "", what: "resize")
        return derived(out, from: pixels)
    }

    static func crop(_ pixels: Pixels, x: Int, y: Int, width: Int, height: Int) throws -> Pixels {
        var out = attache_image()
        try check(attache_crop(&pixels.image, Int32(x), Int32(y), Int32(width), Int32(height), &out), "", what: "crop")
        return derived(out, from: pixels)
    }

    static func orient(_ pixels: Pixels, orientation: Int) throws -> Pixels {
        guard orientation > 1 else { return pixels }
        var out = attache_image()
        try check(attache_orient(&pixels.image, Int32(orientation), &out), "", what: "orient")
        return derived(out, from: pixels)
    }

    /// A copy over white, as RGB: JPEG for images with transparency.
    static func flattened(_ pixels: Pixels) throws -> Pixels {
        let copy = try crop(pixels, x: 0, y: 0, width: pixels.width, height: pixels.height)
        attache_flatten_on_white(&copy.image)
        return copy
    }

    private static func derived(_ image: attache_image, from source: Pixels) -> Pixels {
        let pixels = Pixels(image)
        pixels.icc = source.icc
        return pixels
    }

    /// An RGBA image with no pixel below full opacity made RGB, in place.
    static func dropUnusedAlpha(_ pixels: Pixels) {
        if pixels.hasAlpha && attache_is_opaque(&pixels.image) != 0 {
            attache_drop_alpha(&pixels.image)
        }
    }

    /// JPEG for opaque images, PNG (straight alpha) when there is transparency. An opaque RGBA
    /// image loses its (unused) alpha channel in place.
    static func encode(_ pixels: Pixels, quality: Int) throws -> (bytes: [UInt8], format: MediaFormat) {
        dropUnusedAlpha(pixels)
        var buffer: UnsafeMutablePointer<UInt8>?
        var length = 0
        var text = [CChar](repeating: 0, count: 160)
        let format: MediaFormat
        let status: attache_status
        let icc = pixels.icc ?? []
        if pixels.hasAlpha {
            // PNG wants straight alpha: on a copy, as the caller may use these pixels again.
            let straight = try crop(pixels, x: 0, y: 0, width: pixels.width, height: pixels.height)
            attache_unpremultiply(&straight.image)
            status = attache_png_encode(&straight.image, icc, icc.count, &buffer, &length, &text)
            format = .png
        } else {
            status = attache_jpeg_encode(&pixels.image, Int32(quality), icc, icc.count, &buffer, &length, &text)
            format = .jpeg
        }
        defer { attache_buffer_free(buffer) }
        let message = String(cBuffer: text)
        try check(status, message, what: "encode")
        guard let buffer else { throw MediaError(.invalidMedia, "encoder produced nothing") }
        return (Array(UnsafeBufferPointer(start: buffer, count: length)), format)
    }
}
