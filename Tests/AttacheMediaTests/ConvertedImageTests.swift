import AttachePayload
import AttacheSupport
import AttacheTestTraits
import AttacheTesting
import Testing
@testable import AttacheMedia

/// HEIC, AVIF, WebP and JPEG XL, which iOS does not show: read by their own libraries, converted
/// to JPEG, PNG or an animated GIF. The samples are Debian's encoders' output
/// (Samples/media/make-converted.sh). A conversion takes seconds in a debug build: on the tests'
/// own threads, one case at a time.
@Suite(.serialized, .onTestThreads) struct ConvertedImageTests {
    let pipeline = ImagePipeline()

    func render(_ bytes: [UInt8], _ options: RenderOptions = RenderOptions(), limits: MediaLimits = MediaLimits()) throws -> ImageRendition {
        let pipeline = ImagePipeline(limits: limits)
        return try pipeline.render(bytes, header: try pipeline.inspect(bytes), options: options)
    }

    /// Two encoded images decoded and compared: the mean difference per channel value, 0–255
    /// (255 when the sizes differ), and whether the first has alpha.
    func compare(_ a: [UInt8], _ aFormat: MediaFormat, _ b: [UInt8], _ bFormat: MediaFormat) throws -> (difference: Double, alpha: Bool) {
        func decode(_ bytes: [UInt8], _ format: MediaFormat) throws -> Pixels {
            try bytes.withUnsafeBytes { try ImageCodecs.decode($0, format: format, plan: DecodePlan(), limits: MediaLimits(), abort: AbortFlag()) }
        }
        let first = try decode(a, aFormat)
        let x = first.straightRGBA(), y = try decode(b, bFormat).straightRGBA()
        guard x.count == y.count, !x.isEmpty else { return (255, first.hasAlpha) }
        return (Double(zip(x, y).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }) / Double(x.count), first.hasAlpha)
    }

    @Test(arguments: [
        ("photo.heic", MediaFormat.heic, 640, 480, 1, false), ("photo.avif", .avif, 640, 480, 1, false),
        ("photo.webp", .webp, 640, 480, 1, false), ("photo.jxl", .jxl, 640, 480, 1, false),
        ("alpha.heic", .heic, 400, 300, 1, true), ("alpha.avif", .avif, 400, 300, 1, true), ("alpha.webp", .webp, 400, 300, 1, true),
        ("animated.webp", .webp, 200, 150, 7, false), ("animated.avif", .avif, 200, 150, 7, true),
    ])
    func headersAreReadByEachLibrary(_ name: String, _ format: MediaFormat, _ width: Int, _ height: Int, _ frames: Int, _ alpha: Bool) async throws {
        let header = try pipeline.inspect(Fixtures.bytes(name))
        #expect(header.format == format)
        #expect((header.width, header.height, header.frames) == (width, height, frames))
        #expect(header.hasAlpha == alpha)
    }

    /// Each still comes out as a JPEG (PNG with alpha) copy at its own size, with a thumbnail and a
    /// placeholder, and looks like the image it was made from.
    @Test(arguments: ["photo.heic", "photo.avif", "photo.webp", "photo.jxl"])
    func stillsBecomeJPEG(_ name: String) async throws {
        let r = try render(Fixtures.bytes(name))
        let display = try #require(r.display)
        #expect(display.format == .jpeg)
        #expect((display.width, display.height) == (640, 480))
        #expect((r.thumbnail.format, r.thumbnail.width, r.thumbnail.height) == (.jpeg, 320, 240))
        #expect(r.convertedFrom == r.header.format)
        #expect(r.thumbhash != nil)
        // Against the JPEG sample it was encoded from, scaled the same way (lossy both ends).
        let source = try render(Fixtures.bytes("photo.jpg"), RenderOptions(displaySize: 640))
        #expect(try compare(display.bytes, .jpeg, try #require(source.display).bytes, .jpeg).difference < 12)
    }

    @Test(arguments: ["alpha.heic", "alpha.avif", "alpha.webp"])
    func transparencyBecomesPNG(_ name: String) async throws {
        let r = try render(Fixtures.bytes(name))
        let display = try #require(r.display)
        #expect(display.format == .png)
        #expect(r.thumbnail.format == .png)
        let (difference, alpha) = try compare(display.bytes, .png, Fixtures.bytes("alpha.png"), .png)
        #expect(alpha)
        #expect(difference < 12)
    }

    /// AVIF's irot (libavif leaves it to the caller) turns the copy upright, as EXIF 6 does for
    /// the JPEG with the same stored pixels.
    @Test func avifRotationIsApplied() async throws {
        let header = try pipeline.inspect(Fixtures.bytes("rotated.avif"))
        #expect((header.orientation, header.displayWidth, header.displayHeight) == (6, 400, 600))
        let r = try render(Fixtures.bytes("rotated.avif"))
        let display = try #require(r.display)
        #expect((display.width, display.height) == (400, 600))
        let jpeg = try render(Fixtures.bytes("rotated.jpg"))
        #expect((r.thumbnail.width, r.thumbnail.height) == (jpeg.thumbnail.width, jpeg.thumbnail.height))
        let error = try compare(r.thumbnail.bytes, .jpeg, jpeg.thumbnail.bytes, .jpeg).difference
        #expect(error < 12, "mean difference \(error)")
    }

    /// The embedded profile (Adobe RGB here; Display P3 on an iPhone) reaches the JPEG copy, so
    /// the device shows the colours the source had.
    @Test func theColourProfileIsCarried() async throws {
        // The profile as the AVIF holds it: a `colr` box of type `prof`, the ICC bytes after it
        // (an ICC profile starts with its own length).
        let avif = Fixtures.bytes("wide-gamut.avif")
        let start = try #require(avif.firstRange(of: Array("colrprof".utf8))).upperBound
        let length = avif[start..<start + 4].reduce(0) { $0 << 8 | Int($1) }
        let profile = Array(avif[start..<start + length])
        #expect(profile[16..<20].elementsEqual("RGB ".utf8))
        let r = try render(avif)
        let display = try #require(r.display).bytes
        #expect(display.firstRange(of: Array("ICC_PROFILE\0".utf8)) != nil)
        #expect(display.firstRange(of: profile) != nil)
        // An sRGB source gets none.
        #expect(try #require(render(Fixtures.bytes("photo.webp")).display).bytes.firstRange(of: Array("ICC_PROFILE\0".utf8)) == nil)
    }

    /// An animation becomes an animated GIF of every frame, which the GIF reader takes back.
    @Test(arguments: ["animated.webp", "animated.avif"])
    func animationsBecomeGIF(_ name: String) async throws {
        let r = try render(Fixtures.bytes(name))
        let display = try #require(r.display)
        #expect(display.format == .gif)
        #expect(display.frames == 7)
        let header = try pipeline.inspect(display.bytes)
        #expect((header.format, header.width, header.height, header.frames) == (.gif, 200, 150, 7))
        _ = try render(display.bytes)  // every frame decodes
        #expect(r.thumbnail.format == .jpeg)
    }

    /// Over the image cap, the GIF is made again smaller, then with fewer frames; when nothing
    /// fits, a still of the first frame goes instead.
    @Test func animationsAreFittedToTheCap() async throws {
        let movie = Fixtures.bytes("movie.webp")  // 20 frames of 320x240 video
        let whole = try #require(render(movie).display)
        #expect((whole.format, whole.frames, whole.width) == (.gif, 20, 320))
        let cap = whole.bytes.count / 3
        let fitted = try #require(render(movie, limits: MediaLimits(imageBytes: cap)).display)
        #expect(fitted.format == .gif)
        #expect(fitted.bytes.count <= cap)
        #expect(fitted.frames > 1)
        #expect(fitted.width < whole.width || fitted.frames < whole.frames)
        #expect(try pipeline.inspect(fitted.bytes).frames == fitted.frames)
        let tight = movie.count / 2  // the least a 75 KB source is taken with
        let smaller = try #require(render(movie, limits: MediaLimits(imageBytes: tight)).display)
        #expect(smaller.bytes.count <= tight)
        // 7 frames of animated.webp in 600 bytes: no GIF fits, its first frame goes as a still.
        let small = Fixtures.bytes("animated.webp")
        let still = try #require(render(small, limits: MediaLimits(imageBytes: max(600, small.count / 2))).display)
        #expect(still.format == .jpeg)
        #expect(still.frames == 1)
    }

    /// A GIF over the cap (up to twice it is downloaded) is made to fit the same way, not refused;
    /// what stays is the read limit on frames.
    @Test func oversizeGIFsAreFitted() async throws {
        let gif = try #require(render(Fixtures.bytes("movie.webp")).display).bytes  // 20 frames, 320x240
        let cap = gif.count * 2 / 3
        let limits = MediaLimits(imageBytes: cap)
        let header = try ImagePipeline(limits: limits).inspect(gif)
        #expect((header.format, header.frames) == (.gif, 20))
        let fitted = try #require(render(gif, limits: limits).display)
        #expect(fitted.format == .gif)
        #expect(fitted.bytes.count <= cap)
        #expect(fitted.frames > 1)
        #expect(try pipeline.inspect(fitted.bytes).frames == fitted.frames)
        // Over twice the cap is not downloaded in full, and refused if it were.
        #expect { try render(gif, limits: MediaLimits(imageBytes: gif.count / 3)) } throws: { ($0 as? MediaError)?.code == .tooLarge }
        #expect { try render(Fixtures.gif(frames: 3), limits: MediaLimits(maxGIFFrames: 2)) } throws: {
            ($0 as? MediaError)?.code == .limitsExceeded
        }
    }

    /// A cut file is invalid media, wherever it is cut: never a crash, never a half image.
    @Test(arguments: ["photo.heic", "photo.avif", "photo.webp", "photo.jxl", "alpha.webp", "animated.webp", "animated.avif"])
    func truncatedFilesAreInvalid(_ name: String) async throws {
        let bytes = Fixtures.bytes(name)
        for keep in [bytes.count / 2, bytes.count * 9 / 10, 40] {
            let cut = Array(bytes.prefix(keep))
            #expect(throws: MediaError.self) { try render(cut) }
            do {
                _ = try render(cut)
            } catch let error as MediaError {
                #expect(error.code == .invalidMedia, "\(name) cut at \(keep): \(error)")
            }
        }
    }

    /// 8000x8000 of one colour in a few KB: refused from the header, before a pixel is allocated.
    @Test(arguments: ["64mp.webp", "64mp.avif", "64mp.jxl"])
    func headerBombsAreRefusedBeforeDecoding(_ name: String) async throws {
        let bytes = Fixtures.bytes(name, in: Fixtures.mediaDirectory + "/bombs")
        #expect(bytes.count < 10_000)
        #expect { try pipeline.inspect(bytes) } throws: { ($0 as? MediaError)?.code == .limitsExceeded }
    }

    /// HEIC (and AVIF) sizes come from the `ispe` property: one that claims 9000x9000 is refused
    /// before decoding, whatever the coded image is.
    @Test(arguments: ["photo.heic", "photo.avif"])
    func aLyingSizePropertyIsRefused(_ name: String) async throws {
        var bytes = Fixtures.bytes(name)
        let ispe = try #require(bytes.firstRange(of: Array("ispe".utf8)))
        for offset in [ispe.upperBound + 4, ispe.upperBound + 8] {  // after version and flags: width, height
            bytes.replaceSubrange(offset..<offset + 4, with: [0, 0, 0x23, 0x28])  // 9000
        }
        #expect { try pipeline.inspect(bytes) } throws: { ($0 as? MediaError)?.code == .limitsExceeded }
    }
}
