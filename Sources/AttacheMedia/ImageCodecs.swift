// The one Swift file that calls CImageCodecs (libjpeg-turbo, libpng, giflib and pixel ops).
internal import CImageCodecs
import AttacheSupport
#if canImport(Glibc)
import Glibc
#endif

/// An 8-bit RGB or premultiplied-RGBA image owned by C memory, freed with its owner.
final class Pixels {
    fileprivate var image: attache_image

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

    /// One pixel's channel values (for tests and diagnostics).
    func channelValues(x: Int, y: Int) -> [Int] {
        let c = Int(image.channels)
        let offset = (y * width + x) * c
        return (0..<c).map { Int(image.pixels[offset + $0]) }
    }
}

/// How a decode is to be done: the reductions applied while rows stream out of the decoder.
struct DecodePlan {
    var jpegScaleDenominator = 1
    var boxShrink = 1
}

enum ImageCodecs {
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

    static func decode(_ bytes: UnsafeRawBufferPointer, format: MediaFormat, plan: DecodePlan, limits: MediaLimits, abort: AbortFlag) throws -> Pixels {
        var options = attache_decode_options()
        options.scale_denom = Int32(plan.jpegScaleDenominator)
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
        var out = attache_image()
        let data = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self)
        let status: attache_status
        switch format {
        case .jpeg: status = attache_jpeg_decode(data, bytes.count, &options, &out)
        case .png: status = attache_png_decode(data, bytes.count, &options, &out)
        case .gif: status = attache_gif_decode(data, bytes.count, &options, &out)
        default: status = ATTACHE_ERR_UNSUPPORTED
        }
        // withExtendedLifetime: the C code held an unretained pointer to `abort`.
        withExtendedLifetime(abort) {}
        try check(status, message(&options), what: format.rawValue)
        return Pixels(out)
    }

    static func resize(_ pixels: Pixels, width: Int, height: Int) throws -> Pixels {
        var out = attache_image()
        try check(attache_resize(&pixels.image, Int32(width), Int32(height), &out), "", what: "resize")
        return Pixels(out)
    }

    static func crop(_ pixels: Pixels, x: Int, y: Int, width: Int, height: Int) throws -> Pixels {
        var out = attache_image()
        try check(attache_crop(&pixels.image, Int32(x), Int32(y), Int32(width), Int32(height), &out), "", what: "crop")
        return Pixels(out)
    }

    static func orient(_ pixels: Pixels, orientation: Int) throws -> Pixels {
        guard orientation > 1 else { return pixels }
        var out = attache_image()
        try check(attache_orient(&pixels.image, Int32(orientation), &out), "", what: "orient")
        return Pixels(out)
    }

    /// JPEG for opaque images, PNG (straight alpha) when there is transparency.
    static func encode(_ pixels: Pixels, quality: Int) throws -> (bytes: [UInt8], format: MediaFormat) {
        if pixels.hasAlpha && attache_is_opaque(&pixels.image) != 0 {
            attache_drop_alpha(&pixels.image)
        }
        var buffer: UnsafeMutablePointer<UInt8>?
        var length = 0
        var text = [CChar](repeating: 0, count: 160)
        let format: MediaFormat
        let status: attache_status
        if pixels.hasAlpha {
            attache_unpremultiply(&pixels.image)
            status = attache_png_encode(&pixels.image, &buffer, &length, &text)
            format = .png
        } else {
            status = attache_jpeg_encode(&pixels.image, Int32(quality), &buffer, &length, &text)
            format = .jpeg
        }
        defer { attache_buffer_free(buffer) }
        let message = String(cBuffer: text)
        try check(status, message, what: "encode")
        guard let buffer else { throw MediaError(.invalidMedia, "encoder produced nothing") }
        return (Array(UnsafeBufferPointer(start: buffer, count: length)), format)
    }
}
