import AttachePayload
import AttacheSupport

/// An encoded image Attache made (thumbnail or display copy).
public struct RenderedImage: Sendable {
    public var bytes: [UInt8]
    public var format: MediaFormat
    public var width: Int
    public var height: Int
    /// More than 1 for an animated GIF made from an animation.
    public var frames = 1
}

public struct RenderOptions: Sendable, Hashable {
    /// Longest edge of the thumbnail.
    public var thumbnailSize: Int
    /// Longest edge of the display copy, made only when the source is larger (or over its cap).
    public var displaySize: Int
    public var clip: MediaOptions.ClipRect?
    public var jpegQuality: Int
    /// False: the thumbnail only, never a display or converted copy (`attache thumbnail`).
    public var makesDisplayCopy: Bool
    /// Longest edge of an Android copy (a JPEG within FCM's 1 MB, never cropped), made from the
    /// same decode for an FCM send request; nil: none.
    public var androidSize: Int?
    /// How movies and sounds the device would not play are converted; nil: they are refused.
    public var transcode: TranscodeSettings?
    /// False: a movie that needs converting is judged as convertible and given its poster, but not
    /// converted yet (the poster can be attached while the conversion runs as a job of its own).
    public var convertsNow = true
    /// An animation made into a movie also gets a GIF copy within the image cap, when one fits
    /// (iOS plays a GIF attachment by itself, looping); false: the movie alone (`attache convert`).
    public var keepsGIFCopy = true

    public init(thumbnailSize: Int = 320, displaySize: Int = 1080, clip: MediaOptions.ClipRect? = nil, jpegQuality: Int = 80,
                makesDisplayCopy: Bool = true, androidSize: Int? = nil, transcode: TranscodeSettings? = nil) {
        self.transcode = transcode
        self.thumbnailSize = thumbnailSize
        self.displaySize = displaySize
        self.clip = clip
        self.jpegQuality = jpegQuality
        self.makesDisplayCopy = makesDisplayCopy
        self.androidSize = androidSize
    }

    /// FCM's limit on a notification image.
    public static let androidMaxBytes = 1_000_000
    /// BigPictureStyle shows 450 dp at most: 1350 pixels at 3x.
    public static let androidEdge = 1350
}

public struct ImageRendition: Sendable {
    public var header: ImageHeader
    public var thumbnail: RenderedImage
    /// Nil when the validated original is small enough to be stored as it is; always set for a
    /// format iOS does not show (the converted copy).
    public var display: RenderedImage?
    /// The ThumbHash of the thumbnail (see `ThumbHash`), base64.
    public var thumbhash: String?
    /// The Android copy, when `RenderOptions.androidSize` asked for one.
    public var android: RenderedImage?
    /// An animation's GIF copy beside the movie made of it (`RenderOptions.keepsGIFCopy`).
    public var gif: RenderedImage?

    public init(header: ImageHeader, thumbnail: RenderedImage, display: RenderedImage?, thumbhash: String? = nil, android: RenderedImage? = nil,
                gif: RenderedImage? = nil) {
        self.header = header
        self.thumbnail = thumbnail
        self.display = display
        self.thumbhash = thumbhash
        self.android = android
        self.gif = gif
    }

    /// The source format, when what goes to the device is a copy in another format (a HEIC's
    /// JPEG, an opaque PNG's JPEG display copy) or a GIF made to fit.
    public var convertedFrom: MediaFormat? {
        guard let display, display.format != header.format || header.format == .gif else { return nil }
        return header.format
    }
}

/// Inspect (header limits), decode-validate, and render thumbnails and display copies.
public struct ImagePipeline: Sendable {
    /// Loads libheif, libavif and libjxl now, which are otherwise loaded on first use: what a
    /// sandboxed decoder does before it may no longer open files.
    public static func loadLibraries() throws {
        try ImageCodecs.loadLibraries()
    }

    public var limits: MediaLimits

    public init(limits: MediaLimits = MediaLimits()) {
        self.limits = limits
    }

    /// Header facts, with every limit that can be checked before a pixel is allocated.
    public func inspect(_ bytes: [UInt8], format: MediaFormat? = nil) throws(MediaError) -> ImageHeader {
        try withBytes(bytes) { (b) throws(MediaError) in try inspect(b, format: format) }
    }

    /// The same, on bytes the caller holds (a mapped file, a received buffer). `format`, when the
    /// caller has sniffed the bytes already (the media policy did, during the download).
    public func inspect(_ bytes: UnsafeRawBufferPointer, format known: MediaFormat? = nil) throws(MediaError) -> ImageHeader {
        guard let format = known ?? Sniffer.sniff(bytes) else {
            throw MediaError(.unsupportedType, "not a recognised media format")
        }
        guard format.kind == .image else {
            throw MediaError(.unsupportedType, "\(format.rawValue) is \(format.kind.rawValue), not an image")
        }
        guard format.isSupportedByIOS || format.isConvertedForIOS else {
            throw MediaError(.unsupportedType, "\(format.rawValue) is not an image Attache can attach or convert")
        }
        // Up to twice the cap: what is over it is made into a copy that fits.
        guard bytes.count <= limits.imageBytes * 2 else {
            throw MediaError(.tooLarge, "\(bytes.count) bytes is over twice the \(limits.imageBytes)-byte image cap")
        }
        let header = try ImageHeader.read(bytes, format: format, limits: limits)
        if header.frames > limits.maxGIFFrames {
            throw MediaError(.limitsExceeded, "\(header.frames) frames (limit \(limits.maxGIFFrames))")
        }
        // At the smallest scale here; a render checks again at the scale it decodes at.
        let smallest = plan(header, need: 1, boxTarget: 1)
        try checkDecoderMemory(header, plan: smallest)
        let decoded = decodedPixels(header, plan: smallest)
        if decoded > limits.maxPixels {
            throw MediaError(.limitsExceeded, "\(header.width)x\(header.height) is over the \(limits.maxPixels)-pixel decode budget")
        }
        return header
    }

    /// A progressive JPEG's coefficients as the decoder keeps them with `plan` (fewer when it is
    /// scaled: coefficients.c), within the decoder's memory budget.
    func checkDecoderMemory(_ header: ImageHeader, plan: DecodePlan) throws(MediaError) {
        // What libjpeg needs besides the coefficients (its pools, a few rows, the Huffman state):
        // a margin, so that a file just under the limit is refused here rather than by libjpeg.
        let working = 4 << 20
        let kept = ImageCodecs.keptCoefficientBytes(header, plan: plan)
        if kept > 0 && kept + working > limits.maxDecoderMemory {
            throw MediaError(.limitsExceeded, "progressive \(header.width)x\(header.height) JPEG needs \(kept >> 20) MiB of coefficients at \(plan.jpegScaleEighths)/8 (limit \(limits.maxDecoderMemory >> 20) MiB)")
        }
    }

    /// Pixels the decoder will hold: a baseline JPEG counts at its DCT-scaled size; a progressive
    /// JPEG (whose coefficients are kept for the whole image until its last scan, fewer of them
    /// when it is scaled: coefficients.c) and other formats at full size.
    func decodedPixels(_ header: ImageHeader, plan: DecodePlan) -> Int {
        if header.format == .jpeg && !header.progressive {
            return plan.jpegScaled(header.width) * plan.jpegScaled(header.height)
        }
        return header.width * header.height
    }

    /// The reductions made while decoding: a JPEG's IDCT to the smallest n/8 whose longest edge
    /// is still at least `need` (a scaled IDCT is a proper reduction, as libvips' and Pillow's
    /// shrink-on-load are), then the largest integer box shrink that keeps at least `boxTarget`
    /// (a box average is coarser than the resample after it, so it leaves twice the thumbnail).
    /// A baseline JPEG takes the next of 1/8, 2/8, 4/8 and 8/8 instead, when its pixels stay in
    /// the budget: libjpeg-turbo has SIMD IDCTs for those and plain C for 3/8, 5/8, 6/8 and 7/8,
    /// so 4/8 of a 9 MP photo decodes faster than 3/8 (35 against 37 ms, djpeg) though it makes
    /// 1.8 times the pixels, whose resample runs on the second thread beside the decode. Not a
    /// progressive one: its coefficients are held until the last scan, and at 4/8 all of them.
    func plan(_ header: ImageHeader, need: Int, boxTarget: Int) -> DecodePlan {
        var plan = DecodePlan()
        var edge = max(header.width, header.height)
        if header.format == .jpeg {
            let smallest: Int = (1...8).first { plan.jpegScaled(edge, eighths: $0) >= need } ?? 8
            let simd = [1, 2, 4, 8].first(where: { $0 >= smallest }) ?? 8
            let simdPixels = plan.jpegScaled(header.width, eighths: simd) * plan.jpegScaled(header.height, eighths: simd)
            plan.jpegScaleEighths = !header.progressive && simdPixels <= limits.maxPixels ? simd : smallest
            edge = plan.jpegScaled(edge)
        }
        let target = max(1, boxTarget)
        plan.boxShrink = max(1, edge / target)
        while plan.boxShrink > 1 && (edge + plan.boxShrink - 1) / plan.boxShrink < target { plan.boxShrink -= 1 }
        return plan
    }

    /// The plan for a rendition of `edge` pixels (0: none) with the thumbnail and Android copy
    /// `options` ask for, never larger than the source.
    func plan(_ header: ImageHeader, options: RenderOptions, edge: Int) -> DecodePlan {
        let longest = max(header.width, header.height)
        let android = options.androidSize ?? 0
        return plan(header, need: min(longest, max(edge, thumbnailNeed(options), android)),
                    boxTarget: min(longest, max(edge, thumbnailTarget(options), android)))
    }

    /// Decodes (validating the whole first frame, and every later frame of a GIF), then makes the thumbnail and, when the source
    /// is larger than the display size or over its byte cap, a display copy — from one decode.
    public func render(_ bytes: [UInt8], header: ImageHeader, options: RenderOptions, abort: AbortFlag = AbortFlag()) throws -> ImageRendition {
        try bytes.withUnsafeBytes { try render($0, header: header, options: options, abort: abort) }
    }

    /// The same, on bytes the caller holds; they must stay valid until it returns. `mapped`: they
    /// are a read-only file mapping (`InputFile.isMapped`), whose pages the decoder gives back
    /// as it reads them.
    public func render(_ bytes: UnsafeRawBufferPointer, header: ImageHeader, options: RenderOptions, abort: AbortFlag = AbortFlag(),
                       mapped: Bool = false) throws -> ImageRendition {
        let longest = max(header.width, header.height)
        let animated = header.frames > 1
        let converted = header.format.isConvertedForIOS
        // An animation iOS does not show, or a GIF over Apple's cap: made into a movie, or a GIF that fits.
        if animated && options.makesDisplayCopy && (converted || bytes.count > limits.imageBytes) {
            let converter = AnimationConverter(pipeline: self, header: header, options: options, abort: abort)
            if let settings = options.transcode { return try converter.movie(bytes, settings: settings) }
            return try converter.render(bytes)
        }
        let needsDisplay = options.makesDisplayCopy && !animated && (converted || longest > options.displaySize || bytes.count > limits.imageBytes)
        let plan = plan(header, options: options, edge: needsDisplay ? options.displaySize : 0)
        try checkDecoderMemory(header, plan: plan)
        guard needsDisplay else {
            let decoded = try ImageCodecs.decode(bytes, format: header.format, plan: plan, limits: limits, abort: abort,
                                                 fitting: nil, mapped: mapped).decoded
            return try finish(header: header, firstFrame: decoded, display: nil, options: options, alone: true)
        }
        // The display copy's resample runs beside the decode, on the rows it has finished, and
        // hands each of its own rows on as it is made: to the thumbnail's resample (unless the
        // thumbnail is a clip) and to the encoder (when the copy needs no turning upright). After
        // the decode's last row, only the encoder's Huffman pass and the thumbnail's encode are
        // left. The thumbnail comes from the copy's pixels when they are enough for it (a third
        // of the pixels to resample); then, with no Android copy, nothing needs the decoded image
        // itself, and the decoder keeps only a ring of rows for the resample.
        let decodedSize = decodedSize(header, plan: plan)
        let copySize = ImageCodecs.fit(width: decodedSize.width, height: decodedSize.height, edge: options.displaySize)
        let thumbnailFromCopy = max(copySize.width, copySize.height) >= thumbnailTarget(options)
        let made = try ImageCodecs.decode(bytes, format: header.format, plan: plan, limits: limits, abort: abort,
                                          fitting: options.displaySize,
                                          thumbnailEdge: options.clip == nil ? options.thumbnailSize : nil,
                                          jpegQuality: header.orientation <= 1 ? options.jpegQuality : nil,
                                          keepDecoded: options.androidSize != nil || !thumbnailFromCopy, mapped: mapped)
        guard let scaledOrDecoded = made.fitted ?? made.decoded else { throw MediaError(.invalidMedia, "no pixels decoded") }
        let scaled = made.fitted == nil ? try scaled(scaledOrDecoded, clip: nil, edge: options.displaySize) : scaledOrDecoded
        let decoded = made.decoded ?? scaled
        // Both threads read `scaled`: the encoder's one change to it (an unused alpha channel
        // dropped) is made before they start.
        ImageCodecs.dropUnusedAlpha(scaled)
        let fromCopy = max(scaled.width, scaled.height) >= thumbnailTarget(options)
        let thumbnail = fromCopy ? made.thumbnail : nil
        if let encoded = made.encoded {
            let display = RenderedImage(bytes: encoded, format: .jpeg, width: scaled.width, height: scaled.height)
            return try finish(header: header, firstFrame: decoded, thumbnailSource: fromCopy ? scaled : decoded,
                              scaledThumbnail: thumbnail, display: display, options: options, alone: true)
        }
        // The display copy is encoded on a second thread while this one makes the thumbnail.
        var (display, rendition) = try concurrently({
            try encode(ImageCodecs.orient(scaled, orientation: header.orientation), quality: options.jpegQuality)
        }, {
            try finish(header: header, firstFrame: decoded, thumbnailSource: fromCopy ? scaled : decoded,
                       scaledThumbnail: thumbnail, display: nil, options: options)
        })
        rendition.display = display
        return rendition
    }

    /// The size a decoder hands out with `plan`: a JPEG's DCT scale, then the box shrink.
    func decodedSize(_ header: ImageHeader, plan: DecodePlan) -> (width: Int, height: Int) {
        func size(_ edge: Int) -> Int {
            let scaled = header.format == .jpeg ? plan.jpegScaled(edge) : edge
            return (scaled + plan.boxShrink - 1) / plan.boxShrink
        }
        return (size(header.width), size(header.height))
    }

    /// The thumbnail's longest edge over the clipped share of the source: what the source must
    /// have at least.
    func thumbnailNeed(_ options: RenderOptions, times factor: Int = 1) -> Int {
        let clipShare = options.clip?.clamped.map { min($0.width, $0.height) } ?? 1
        return Int((Double(options.thumbnailSize * factor) / clipShare).rounded(.up))
    }

    /// Twice that: enough for a sharp resample.
    func thumbnailTarget(_ options: RenderOptions) -> Int { thumbnailNeed(options, times: 2) }

    /// The thumbnail and its placeholder hash, from the decoded (first) frame or pixels scaled
    /// from it (as stored, not yet upright), and the Android copy from the decoded frame.
    /// `scaledThumbnail`: the thumbnail already resampled from `thumbnailSource`, as stored.
    /// `alone`: nothing else runs beside this, so the thumbnail's encode and its placeholder hash
    /// take a thread each (beside the display copy's encode, a third thread would only contend).
    func finish(header: ImageHeader, firstFrame: Pixels, thumbnailSource: Pixels? = nil, scaledThumbnail: Pixels? = nil,
                display: RenderedImage?, options: RenderOptions, alone: Bool = false) throws -> ImageRendition {
        let thumbnail = try scaledThumbnail.map { try ImageCodecs.orient($0, orientation: header.orientation) }
            ?? sized(thumbnailSource ?? firstFrame, clip: options.clip?.clamped, edge: options.thumbnailSize,
                     orientation: header.orientation)
        let encoded: RenderedImage, thumbhash: String
        if alone {
            // Both read the pixels: the encoder's one change to them (an unused alpha channel
            // dropped) is made before they start.
            ImageCodecs.dropUnusedAlpha(thumbnail)
            (thumbhash, encoded) = try concurrently({ try placeholder(thumbnail) }, { try encode(thumbnail, quality: options.jpegQuality) })
        } else {
            (encoded, thumbhash) = (try encode(thumbnail, quality: options.jpegQuality), try placeholder(thumbnail))
        }
        return ImageRendition(header: header, thumbnail: encoded, display: display, thumbhash: thumbhash,
                              android: try options.androidSize.flatMap { try android(firstFrame, header: header, edge: $0) })
    }

    /// A JPEG (over white where there is transparency) of the whole image, within FCM's 1 MB:
    /// lower quality first, then smaller, until it fits.
    func android(_ frame: Pixels, header: ImageHeader, edge: Int) throws -> RenderedImage? {
        var edge = edge
        while edge >= 64 {
            var pixels = try sized(frame, clip: nil, edge: edge, orientation: header.orientation)
            if pixels.hasAlpha { pixels = try ImageCodecs.flattened(pixels) }
            for quality in [80, 65, 50] {
                let image = try encode(pixels, quality: quality)
                if image.bytes.count <= RenderOptions.androidMaxBytes { return image }
            }
            edge = edge * 3 / 4
        }
        return nil
    }

    /// The ThumbHash of an image, from a copy of at most 100 pixels a side.
    func placeholder(_ pixels: Pixels) throws -> String {
        let small = try scaled(pixels, clip: nil, edge: 100)
        return Base64.encode(ThumbHash.encode(width: small.width, height: small.height, rgba: small.straightRGBA()))
    }

    /// JPEG, or PNG when there is transparency.
    func encode(_ pixels: Pixels, quality: Int) throws -> RenderedImage {
        let encoded = try ImageCodecs.encode(pixels, quality: quality)
        return RenderedImage(bytes: encoded.bytes, format: encoded.format, width: pixels.width, height: pixels.height)
    }

    /// Cropped to `clip`, scaled to fit `edge`, and turned upright.
    func sized(_ source: Pixels, clip: MediaOptions.ClipRect?, edge: Int, orientation: Int) throws -> Pixels {
        try ImageCodecs.orient(scaled(source, clip: clip.map { storedRect($0, orientation: orientation) }, edge: edge),
                               orientation: orientation)
    }

    /// Cropped to `clip` (in stored pixels' units) and scaled to fit `edge`, as stored.
    func scaled(_ source: Pixels, clip: MediaOptions.ClipRect?, edge: Int) throws -> Pixels {
        var pixels = source
        if let r = clip {
            let x = Int((r.x * Double(source.width)).rounded()), y = Int((r.y * Double(source.height)).rounded())
            let w = max(1, min(source.width - x, Int((r.width * Double(source.width)).rounded())))
            let h = max(1, min(source.height - y, Int((r.height * Double(source.height)).rounded())))
            pixels = try ImageCodecs.crop(source, x: x, y: y, width: w, height: h)
        }
        let (w, h) = ImageCodecs.fit(width: pixels.width, height: pixels.height, edge: edge)
        return w == pixels.width && h == pixels.height ? pixels : try ImageCodecs.resize(pixels, width: w, height: h)
    }

    /// Maps a rect given on the upright image back onto the stored pixels for EXIF orientation 1–8.
    func storedRect(_ r: MediaOptions.ClipRect, orientation: Int) -> MediaOptions.ClipRect {
        let (x, y, w, h) = (r.x, r.y, r.width, r.height)
        switch orientation {
        case 2: return .init(x: 1 - x - w, y: y, width: w, height: h)
        case 3: return .init(x: 1 - x - w, y: 1 - y - h, width: w, height: h)
        case 4: return .init(x: x, y: 1 - y - h, width: w, height: h)
        case 5: return .init(x: y, y: x, width: h, height: w)
        case 6: return .init(x: y, y: 1 - x - w, width: h, height: w)
        case 7: return .init(x: 1 - y - h, y: 1 - x - w, width: h, height: w)
        case 8: return .init(x: 1 - y - h, y: x, width: h, height: w)
        default: return r
        }
    }
}
