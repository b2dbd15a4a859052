import AttachePayload
import AttacheSupport
import AttacheTestTraits
import AttacheTesting
import Testing
@testable import AttacheMedia

@Suite(.onTestThreads) struct ImagePipelineTests {
    let pipeline = ImagePipeline()

    func render(_ bytes: [UInt8], _ options: RenderOptions = RenderOptions()) throws -> ImageRendition {
        try pipeline.render(bytes, header: try pipeline.inspect(bytes), options: options)
    }

    /// Decodes an encoded JPEG or PNG back to pixels (to look at what the pipeline made).
    func pixels(_ image: RenderedImage) throws -> Pixels {
        try image.bytes.withUnsafeBytes {
            try ImageCodecs.decode($0, format: image.format, plan: DecodePlan(), limits: MediaLimits(), abort: AbortFlag())
        }
    }

    @Test func headers() throws {
        let photo = try pipeline.inspect(Fixtures.bytes("photo.jpg"))
        #expect((photo.width, photo.height, photo.progressive, photo.orientation) == (1600, 1200, false, 1))
        #expect(try pipeline.inspect(Fixtures.bytes("progressive.jpg")).progressive)
        let rotated = try pipeline.inspect(Fixtures.bytes("rotated.jpg"))
        #expect((rotated.orientation, rotated.displayWidth, rotated.displayHeight) == (6, 400, 600))
        let gif = try pipeline.inspect(Fixtures.bytes("animated.gif"))
        #expect((gif.width, gif.height, gif.frames) == (200, 150, 7))
        #expect(try pipeline.inspect(Fixtures.bytes("alpha.png")).hasAlpha)
        #expect(try !pipeline.inspect(Fixtures.bytes("palette.png")).hasAlpha)
    }

    @Test(arguments: [
        ("photo.jpg", 320, 240, MediaFormat.jpeg), ("progressive.jpg", 320, 240, .jpeg), ("alpha.png", 320, 240, .png),
        ("palette.png", 320, 240, .jpeg), ("animated.gif", 200, 150, .jpeg), ("rotated.jpg", 213, 320, .jpeg),
    ])
    func thumbnails(_ name: String, _ width: Int, _ height: Int, _ format: MediaFormat) throws {
        let r = try render(Fixtures.bytes(name))
        #expect(r.thumbnail.width == width)
        #expect(r.thumbnail.height == height)
        #expect(r.thumbnail.format == format)
        #expect(Sniffer.sniff(r.thumbnail.bytes) == format)
    }

    @Test func displayCopyOnlyForLargeSources() throws {
        let big = try render(Fixtures.bytes("photo.jpg"))
        #expect(big.display.map { ($0.width, $0.height) } ?? (0, 0) == (1080, 810))
        #expect(try render(Fixtures.bytes("progressive.jpg")).display == nil)
    }

    @Test func exifOrientationIsApplied() throws {
        // Stored 600x400 with a red band on the left; orientation 6 puts that band on top.
        let thumb = try pixels(try render(Fixtures.bytes("rotated.jpg")).thumbnail)
        #expect((thumb.width, thumb.height) == (213, 320))
        let top = thumb.pixel(x: 106, y: 5), bottom = thumb.pixel(x: 106, y: 300)
        #expect(top.r > 200 && top.g < 60 && top.b < 60)
        #expect(!(bottom.r > 200 && bottom.g < 60))
    }

    @Test func clippingRectIsApplied() throws {
        var options = RenderOptions()
        options.clip = .init(x: 0.5, y: 0, width: 0.25, height: 0.5)  // 400x600 of the 1600x1200 photo
        let r = try render(Fixtures.bytes("photo.jpg"), options)
        #expect((r.thumbnail.width, r.thumbnail.height) == (213, 320))
    }

    @Test func alphaSurvivesAsPNG() throws {
        let thumb = try pixels(try render(Fixtures.bytes("alpha.png")).thumbnail)
        #expect(thumb.hasAlpha)
        #expect(thumb.pixel(x: 2, y: 2).a == 0)  // a transparent corner stays transparent
        #expect(thumb.pixel(x: 160, y: 120).a > 150)  // the circle's middle is mostly opaque
    }

    @Test func truncatedAndCorruptFilesAreInvalidNotCrashes() throws {
        #expect { try render(Fixtures.bytes("truncated.jpg")) } throws: { ($0 as? MediaError)?.code == .invalidMedia }
        for name in ["photo.jpg", "progressive.jpg", "alpha.png", "palette.png", "animated.gif", "rotated.jpg"] {
            var bytes = Fixtures.bytes(name)
            // Cut at several points and scribble over the middle: every outcome must be an error or an image.
            for cut in [bytes.count / 3, bytes.count / 2, bytes.count - 10] {
                expectNoCrash(Array(bytes.prefix(cut)))
            }
            for i in stride(from: bytes.count / 2, to: min(bytes.count, bytes.count / 2 + 64), by: 1) { bytes[i] ^= 0x5A }
            expectNoCrash(bytes)
        }
    }

    /// The display copy resampled on a second thread from the rows the decoder has finished is
    /// the copy a resample after the decode makes, bit for bit (JPEG and PNG publish rows as they
    /// go; the other decoders hand their image over at the end).
    @Test(arguments: [("photo.jpg", 8, 1), ("photo.jpg", 3, 1), ("progressive.jpg", 8, 1), ("alpha.png", 1, 1),
                      ("alpha.png", 1, 3), ("palette.png", 1, 2), ("photo.webp", 1, 1), ("animated.gif", 1, 1)])
    func theResampleBesideTheDecodeIsTheOneAfterIt(_ name: String, _ eighths: Int, _ shrink: Int) throws {
        let bytes = Fixtures.bytes(name)
        let format = try pipeline.inspect(bytes).format
        var plan = DecodePlan()
        (plan.jpegScaleEighths, plan.boxShrink) = (eighths, shrink)
        try bytes.withUnsafeBytes { raw in
            let (decoded, fitted) = try ImageCodecs.decode(raw, format: format, plan: plan, limits: MediaLimits(), abort: AbortFlag(), fitting: 100)
            let beside = try #require(fitted)
            let after = try pipeline.scaled(ImageCodecs.decode(raw, format: format, plan: plan, limits: MediaLimits(), abort: AbortFlag()),
                                            clip: nil, edge: 100)
            #expect((beside.width, beside.height) == (after.width, after.height))
            #expect(beside.samples == after.samples)
            #expect(try decoded.samples == pipeline.scaled(decoded, clip: nil, edge: 10_000).samples)
            // Already small enough: nothing is resampled.
            #expect(try ImageCodecs.decode(raw, format: format, plan: plan, limits: MediaLimits(), abort: AbortFlag(), fitting: 10_000).fitted == nil)
        }
    }

    /// What the resampling thread makes of the display copy's rows as they are final — the
    /// thumbnail's resample and the JPEG encode — is what resize and encode make of the finished
    /// copy, byte for byte, the source's RGB profile included (a grey one left out), also when the
    /// decoder keeps a ring of rows instead of the decoded image. An RGBA copy is not encoded there
    /// (it may go out as PNG); a copy that needs no thumbnail resample gets none.
    @Test(arguments: [("photo.jpg", 8), ("progressive.jpg", 3), ("alpha.png", 1), ("photo.webp", 1),
                      ("rgb-profile", 8), ("grey-profile", 8)])
    func theThumbnailAndEncodeBesideTheResampleAreTheOnesAfterIt(_ name: String, _ eighths: Int) throws {
        let bytes: [UInt8]
        if name.hasSuffix("-profile") {  // a JPEG carrying a profile, made by the encoder
            let samples: [UInt8] = (0..<(300 * 400 * 3)).map { (i: Int) -> UInt8 in UInt8(truncatingIfNeeded: i / 3 % 400 + i % 3 * 40) }
            let gradient = Pixels(width: 400, height: 300, channels: 3, samples: samples)
            var profile = [UInt8](repeating: 7, count: 200)
            profile.replaceSubrange(16..<20, with: Array((name == "rgb-profile" ? "RGB " : "GRAY").utf8))
            gradient.icc = profile
            bytes = try ImageCodecs.encode(gradient, quality: 90).bytes
        } else {
            bytes = Fixtures.bytes(name)
        }
        let format = try pipeline.inspect(bytes).format
        var plan = DecodePlan()
        plan.jpegScaleEighths = eighths
        try bytes.withUnsafeBytes { raw in
            let made = try ImageCodecs.decode(raw, format: format, plan: plan, limits: MediaLimits(), abort: AbortFlag(),
                                              fitting: 120, thumbnailEdge: 50, jpegQuality: 77)
            let fitted = try #require(made.fitted)
            let thumbnail = try #require(made.thumbnail)
            #expect(thumbnail.samples == (try pipeline.scaled(fitted, clip: nil, edge: 50)).samples)
            if fitted.hasAlpha {
                #expect(made.encoded == nil)
            } else {
                let encoded = try #require(made.encoded)
                #expect(encoded == (try ImageCodecs.encode(fitted, quality: 77)).bytes)
                #expect(name != "rgb-profile" || fitted.icc != nil)
                #expect(name != "grey-profile" || fitted.icc == nil)
            }
            let fits = try ImageCodecs.decode(raw, format: format, plan: plan, limits: MediaLimits(), abort: AbortFlag(),
                                              fitting: 120, thumbnailEdge: 10_000, jpegQuality: nil)
            #expect(fits.thumbnail == nil && fits.encoded == nil)
            // Not keeping the decoded image: a decoder that hands its rows over as it goes keeps
            // a ring of them (of 1, 5 or 64 rows: the decoder waits for slots the resampler gives
            // back), and everything made from the copy is the same.
            for ring in [1, 5, 64] {
                let ringed = try ImageCodecs.decode(raw, format: format, plan: plan, limits: MediaLimits(), abort: AbortFlag(),
                                                    fitting: 120, thumbnailEdge: 50, jpegQuality: 77, keepDecoded: false, ringRows: ring)
                #expect((ringed.decoded == nil) == (format == .jpeg || format == .png), "ring of \(ring)")
                let (sameCopy, sameThumbnail) = (ringed.fitted?.samples == fitted.samples, ringed.thumbnail?.samples == thumbnail.samples)
                #expect(sameCopy && sameThumbnail && ringed.encoded == made.encoded, "ring of \(ring)")
            }
            // Already fitting: the decoded image is kept, whatever was asked.
            let kept = try ImageCodecs.decode(raw, format: format, plan: plan, limits: MediaLimits(), abort: AbortFlag(),
                                              fitting: 10_000, thumbnailEdge: 50, jpegQuality: nil, keepDecoded: false, ringRows: 5)
            #expect(kept.decoded != nil && kept.fitted == nil)
        }
    }

    /// A JPEG of several scans decoded below 8/8 keeps only the coefficients its IDCT reads
    /// (coefficients.c): its pixels are those libjpeg makes from its own buffer of every
    /// coefficient, bit for bit, at every scale and for every layout of components and scans.
    @Test(arguments: ["progressive-444.jpg", "progressive-420.jpg", "progressive-422.jpg", "progressive-440.jpg",
                      "progressive-grey.jpg", "progressive-cmyk.jpg", "progressive-arithmetic.jpg", "sequential-scans.jpg",
                      "../progressive.jpg"])
    func theCoefficientStoreDecodesWhatLibjpegDecodes(_ name: String) throws {
        let bytes = Fixtures.bytes(name, in: Fixtures.mediaDirectory + "/scans")
        try #require(!bytes.isEmpty)
        try bytes.withUnsafeBytes { raw in
            for eighths in 1...8 {
                var plan = DecodePlan()
                plan.jpegScaleEighths = eighths
                var reference = plan
                reference.jpegKeepsAllCoefficients = true
                let kept = try ImageCodecs.decode(raw, format: .jpeg, plan: plan, limits: MediaLimits(), abort: AbortFlag())
                let all = try ImageCodecs.decode(raw, format: .jpeg, plan: reference, limits: MediaLimits(), abort: AbortFlag())
                #expect((kept.width, kept.height) == (all.width, all.height), "\(name) at \(eighths)/8")
                #expect(kept.samples == all.samples, "\(name) at \(eighths)/8")
            }
        }
    }

    /// The store is what the decode holds: under a decoder memory limit too small for libjpeg's
    /// buffer of every coefficient (1 MB for this 479x357 4:4:4 file), a 1/8 or 3/8 decode of
    /// the store's 8 or 21 % of it fits; an 8/8 decode, which reads every coefficient, is refused.
    @Test func aScaledProgressiveDecodeHoldsOnlyTheCoefficientsItReads() throws {
        let bytes = Fixtures.bytes("progressive-444.jpg", in: Fixtures.mediaDirectory + "/scans")
        let limits = MediaLimits(maxDecoderMemory: 512 << 10)
        try bytes.withUnsafeBytes { raw throws in
            for eighths in [1, 3, 8] {
                var plan = DecodePlan()
                plan.jpegScaleEighths = eighths
                var reference = plan
                reference.jpegKeepsAllCoefficients = true
                let decode = { (plan: DecodePlan) in try ImageCodecs.decode(raw, format: .jpeg, plan: plan, limits: limits, abort: AbortFlag()) }
                #expect { try decode(reference) } throws: { ($0 as? MediaError)?.code == .limitsExceeded }
                if eighths == 8 {
                    #expect { try decode(plan) } throws: { ($0 as? MediaError)?.code == .limitsExceeded }
                } else {
                    #expect(try decode(plan).width == (479 * eighths + 7) / 8)
                }
            }
        }
    }

    /// A download that spilled to disk is read from its mapping, and the pages the decoder has
    /// read are given back as it goes (a 9 MP file's 9 MB had stayed resident beside a progressive
    /// JPEG's 55 MB of coefficients): the renditions are those of the same bytes in memory, and
    /// afterwards little of the mapping is resident in this process.
    @Test(arguments: [MediaFormat.jpeg, .png])
    func aMappedFileIsGivenBackAsItIsRead(_ format: MediaFormat) throws {
        // Noise compresses badly: megabytes of file, several release steps. An RGBA image with a
        // transparent corner is encoded as PNG, an RGB one as JPEG.
        let (width, height, channels) = (1600, 1200, format == .png ? 4 : 3)
        var samples = [UInt8](repeating: 255, count: width * height * channels)
        var state: UInt32 = 7
        for i in samples.indices where channels == 3 || i % 4 != 3 {
            state = state &* 1_664_525 &+ 1_013_904_223
            samples[i] = UInt8(truncatingIfNeeded: state >> 24)
        }
        if channels == 4 { for k in 0..<4 { samples[k] = 0 } }
        let encoded = try ImageCodecs.encode(Pixels(width: width, height: height, channels: channels, samples: samples), quality: 100)
        #expect(encoded.format == format)
        let directory = try makeTempDirectory()
        try writeFileAtomically(directory + "/media", encoded.bytes)
        let file = try InputFile(directory + "/media")
        #expect(file.isMapped)
        let job = { (bytes: MappedBytes) in DecodeJob.image(bytes: bytes, format: nil, options: RenderOptions(), limits: MediaLimits()) }
        guard case .image(let mapped, _, _) = try job(.file(file)).perform(),
              case .image(let inMemory, _, _) = try job(.memory(encoded.bytes)).perform() else {
            Issue.record("not an image")
            return
        }
        #expect(mapped.thumbnail.bytes == inMemory.thumbnail.bytes)
        #expect(mapped.display?.bytes == inMemory.display?.bytes)
        let start = file.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) }
        let resident = try #require(try residentKilobytes(ofMappingAt: start))
        #expect(resident * 1024 < encoded.bytes.count / 2, "\(resident) kB of a \(encoded.bytes.count / 1024) kB file still resident")
    }

    /// The Rss of the mapping that starts at `start`, from /proc/self/smaps.
    func residentKilobytes(ofMappingAt start: UInt) throws -> Int? {
        let smaps = String(decoding: try InputFile("/proc/self/smaps").withUnsafeBytes { Array($0) }, as: UTF8.self)
        var inside = false
        for line in smaps.split(separator: "\n") {
            if let dash = line.firstIndex(of: "-"), let address = UInt(line[..<dash], radix: 16), line.contains(" ") {
                inside = address == start
            } else if inside && line.hasPrefix("Rss:") {
                return Int(line.split(separator: " ")[1])
            }
        }
        return nil
    }

    /// A decode that fails or is aborted part-way ends the resample beside it (and a PNG's shrink
    /// relay): an error, no image.
    @Test func aDecodeThatFailsEndsTheResampleBesideIt() throws {
        let png = Fixtures.bytes("alpha.png")
        for cut in [png.count / 4, png.count / 2, png.count - 20] {
            Array(png.prefix(cut)).withUnsafeBytes { raw in
                _ = #expect(throws: MediaError.self) {
                    try ImageCodecs.decode(raw, format: .png, plan: DecodePlan(), limits: MediaLimits(), abort: AbortFlag(), fitting: 100)
                }
            }
        }
        let aborted = AbortFlag()
        aborted.set()
        for (name, format) in [("photo.jpg", MediaFormat.jpeg), ("alpha.png", .png)] {
            var plan = DecodePlan()
            plan.boxShrink = 2  // the PNG's rows go through the shrink relay's thread
            Fixtures.bytes(name).withUnsafeBytes { raw in
                _ = #expect(throws: CancellationError.self) {
                    try ImageCodecs.decode(raw, format: format, plan: plan, limits: MediaLimits(), abort: aborted, fitting: 100)
                }
            }
        }
    }

    /// A GIF over 64 KB has its later frames checked by two walkers at once (gif.c): a whole one
    /// passes; with bad frames, the earliest is the one named, wherever each walker got to; a cut
    /// file, and one over the frame limit, are refused.
    @Test func aLargeGIFsLaterFramesAreCheckedByTwoWalkers() throws {
        let good = Self.literalGIF(side: 100, frames: 40)
        #expect(good.count > 64 * 1024)
        #expect(throws: Never.self) { try render(good) }
        for bad in [[7], [30], [12, 35], [39, 3], [2], [40]] {
            let bytes = Self.literalGIF(side: 100, frames: 40, corrupt: Set(bad))
            #expect { try render(bytes) } throws: {
                "\($0)".contains("frame \(bad.min()!) does not decode (an LZW code past the table)")
            }
        }
        for share in [0.9, 0.6, 0.3] {
            #expect { try render(Array(good.prefix(Int(Double(good.count) * share)))) } throws: {
                ($0 as? MediaError)?.code == .invalidMedia
            }
        }
        var limits = MediaLimits()
        limits.maxGIFFrames = 39
        good.withUnsafeBytes { raw in
            _ = #expect(throws: MediaError.self) {
                try ImageCodecs.decode(raw, format: .gif, plan: DecodePlan(), limits: limits, abort: AbortFlag())
            }
        }
    }

    /// The first frame's LZW decoder (gif.c's decode_lzw, which copies each string from where it
    /// was first written) gives back exactly the indices an independent encoder (below) was
    /// given: runs long enough for the entry being made (KwKwK), the code width growing to 12
    /// bits, a table that fills and is cleared or (a deferred clear) goes on full, and
    /// interlaced rows. The same streams pass the later frames' check. A first frame that does
    /// not decode is named as such.
    @Test func theFirstGIFFrameIsDecodedExactlyFromItsCodeStream() throws {
        let (width, height) = (300, 200)
        var random: UInt32 = 12345
        let indices = (0..<(width * height)).map { i -> UInt8 in
            let (x, y) = (i % width, i / width)
            if y < 60 { return UInt8(x / 40) }  // long runs
            if y < 120 { return UInt8((x + y) & 0xff) }  // a gradient
            random = random &* 1_103_515_245 &+ 12345
            return UInt8((random >> 16) & (y < 160 ? 0x07 : 0xff))  // noise, few colours then many
        }
        for clearWhenFull in [true, false] {
            for interlaced in [false, true] {
                var stored = indices
                if interlaced {
                    stored = []
                    for (start, step) in [(0, 8), (4, 8), (2, 4), (1, 2)] {
                        for y in stride(from: start, to: height, by: step) { stored += indices[(y * width)..<((y + 1) * width)] }
                    }
                }
                let data = Self.lzwBlocks(stored, clearWhenFull: clearWhenFull)
                let bytes = Self.greyGIF(width: width, height: height, frames: [data, data], interlaced: interlaced)
                let pixels = try bytes.withUnsafeBytes {
                    try ImageCodecs.decode($0, format: .gif, plan: DecodePlan(), limits: MediaLimits(), abort: AbortFlag())
                }
                let grey = stride(from: 0, to: pixels.samples.count, by: 3).map { pixels.samples[$0] }
                #expect(grey.count == indices.count)
                #expect(Array(zip(grey, indices)).firstIndex { $0.0 != $0.1 } == nil,
                        "the first wrong pixel; clear when full: \(clearWhenFull), interlaced: \(interlaced)")
            }
        }
        #expect { try render(Self.literalGIF(side: 20, frames: 2, corrupt: [1])) } throws: {
            "\($0)".contains("frame 1 does not decode (an LZW code past the table)")
        }
    }

    /// GIF LZW data for `pixels` (minimum code size 8) in data blocks, from an encoder written
    /// here: the longest string in the table, an entry per code, the code width growing as the
    /// decoder's table does (one entry behind the encoder's); when the table is full, a clear
    /// code, or none (the decoder goes on with the full table).
    static func lzwBlocks(_ pixels: [UInt8], clearWhenFull: Bool) -> [UInt8] {
        var data: [UInt8] = [], bits = 0, count = 0, width = 9
        func emit(_ code: Int) {
            bits |= code << count
            count += width
            while count >= 8 {
                data.append(UInt8(bits & 0xff))
                bits >>= 8
                count -= 8
            }
        }
        var table: [Int: Int] = [:], next = 258, decoderNext = 258, fresh = true
        func reset() {
            emit(256)
            table = [:]
            (next, decoderNext, width, fresh) = (258, 258, 9, true)
        }
        func emitString(_ code: Int) {
            emit(code)
            if !fresh && decoderNext < 4096 {  // the decoder makes its entry for the code before
                decoderNext += 1
                if decoderNext == 1 << width && width < 12 { width += 1 }
            }
            fresh = false
        }
        reset()
        var prefix = Int(pixels[0])
        for pixel in pixels.dropFirst() {
            let key = prefix << 8 | Int(pixel)
            if let code = table[key] {
                prefix = code
                continue
            }
            emitString(prefix)
            if next < 4096 {
                table[key] = next
                next += 1
            } else if clearWhenFull {
                reset()
            }
            prefix = Int(pixel)
        }
        emitString(prefix)
        emit(257)
        if count > 0 { data.append(UInt8(bits & 0xff)) }
        var blocks: [UInt8] = [8]
        for start in stride(from: 0, to: data.count, by: 255) {
            let block = data[start..<min(start + 255, data.count)]
            blocks += [UInt8(block.count)] + block
        }
        return blocks + [0]
    }

    /// A GIF with a 256-grey global table whose frames cover the screen with the given LZW data.
    static func greyGIF(width: Int, height: Int, frames: [[UInt8]], interlaced: Bool = false) -> [UInt8] {
        let w = [UInt8(width & 0xff), UInt8(width >> 8)], h = [UInt8(height & 0xff), UInt8(height >> 8)]
        var b = Array("GIF89a".utf8) + w + h + [0xF7, 0, 0]
        for i in 0..<256 { b += [UInt8(i), UInt8(i), UInt8(i)] }
        for data in frames { b += [0x2C, 0, 0, 0, 0] + w + h + [interlaced ? 0x40 : 0x00] + data }
        return b + [0x3B]
    }

    /// A GIF of `frames` grey `side`×`side` frames, built by hand, each frame's LZW data every
    /// pixel as a literal 9-bit code (a clear code every 253 of them keeps the width at 9): over
    /// 11 KB a frame at 100×100. In the frames numbered in `corrupt` (1 is the first) the code
    /// after the first clear is 511, past the table.
    static func literalGIF(side: Int, frames: Int, corrupt: Set<Int> = []) -> [UInt8] {
        var b = Array("GIF89a".utf8)
        b += [UInt8(side & 0xff), UInt8(side >> 8), UInt8(side & 0xff), UInt8(side >> 8), 0xF7, 0, 0]
        for i in 0..<256 { b += [UInt8(i), UInt8(i), UInt8(i)] }  // a 256-grey global table
        for frame in 1...frames {
            b += [0x2C, 0, 0, 0, 0, UInt8(side & 0xff), UInt8(side >> 8), UInt8(side & 0xff), UInt8(side >> 8), 0x00, 8]
            var codes: [Int] = []
            for pixel in 0..<(side * side) {
                if pixel % 253 == 0 { codes.append(256) }
                codes.append(pixel == 0 && corrupt.contains(frame) ? 511 : (pixel + frame) & 0xff)
            }
            codes.append(257)
            var data: [UInt8] = [], bits = 0, count = 0
            for code in codes {
                bits |= code << count
                count += 9
                while count >= 8 {
                    data.append(UInt8(bits & 0xff))
                    bits >>= 8
                    count -= 8
                }
            }
            if count > 0 { data.append(UInt8(bits & 0xff)) }
            for start in stride(from: 0, to: data.count, by: 255) {
                let block = data[start..<min(start + 255, data.count)]
                b += [UInt8(block.count)] + block
            }
            b.append(0)
        }
        b.append(0x3B)
        return b
    }

    /// A PNG with over a megabyte of rows has them inflated on a thread of its own and handed to
    /// libpng as stored blocks (png_inflate.c): it decodes to exactly its pixels, from libpng's
    /// many small IDAT chunks, one big one, or after an empty one; and it is refused when a
    /// chunk's CRC is wrong, the deflate data is not deflate, the data holds fewer rows than the
    /// header says, or the file is cut anywhere, the last row and IEND included.
    @Test func aLargePNGIsInflatedBesideItsRows() throws {
        let (width, height) = (800, 600)  // 1.9 MB of RGBA rows
        var samples = [UInt8](repeating: 255, count: width * height * 4)
        var state: UInt32 = 11
        for i in samples.indices where i % 4 != 3 && (i / (width * 4)) % 3 != 0 {  // noise, and runs that compress
            state = state &* 1_664_525 &+ 1_013_904_223
            samples[i] = UInt8(truncatingIfNeeded: state >> 24)
        }
        for k in 0..<4 { samples[k] = 0 }  // transparent (premultiplied: all zero), so it is a PNG
        let encoded = try ImageCodecs.encode(Pixels(width: width, height: height, channels: 4, samples: samples), quality: 100)
        #expect(encoded.format == .png)
        let chunks = PNGChunks(encoded.bytes)
        #expect(chunks.count("IDAT") > 10)
        func decoded(_ bytes: [UInt8]) throws -> [UInt8] {
            try bytes.withUnsafeBytes {
                try ImageCodecs.decode($0, format: .png, plan: DecodePlan(), limits: MediaLimits(), abort: AbortFlag()).samples
            }
        }
        let oneIDAT = chunks.joiningIDAT()
        #expect(PNGChunks(oneIDAT).count("IDAT") == 1)
        for good in [encoded.bytes, oneIDAT, chunks.withEmptyIDATFirst()] {
            #expect(try decoded(good) == samples)
        }

        var badCRC = encoded.bytes
        badCRC[chunks.dataRange(ofIDAT: 5).lowerBound + 100] ^= 0x40
        var notDeflate = PNGChunks(oneIDAT)
        notDeflate.replaceIDATData { data in data[2] = 0xff }  // a block of the reserved type 3
        var tooFewRows = chunks
        tooFewRows.replaceHeight(UInt32(height + 1))
        var broken: [(String, [UInt8])] = [("a wrong CRC", badCRC), ("not deflate", notDeflate.bytes), ("one row short", tooFewRows.bytes)]
        for cut in [encoded.bytes.count / 2, chunks.dataRange(ofIDAT: chunks.count("IDAT") - 1).upperBound - 1,
                    encoded.bytes.count - 12, encoded.bytes.count - 1] {
            broken.append(("cut at \(cut) of \(encoded.bytes.count)", Array(encoded.bytes.prefix(cut))))
        }
        for (name, bytes) in broken {
            #expect(throws: MediaError.self, "\(name)") { try decoded(bytes) }
        }
    }

    /// An animated GIF goes to the device as it is: a cut anywhere past the first frame (which once
    /// still decoded, and was stored with the header's frame count) is invalid, as is a later
    /// frame whose LZW data is garbage.
    @Test func everyFrameOfAGIFMustDecodeToTheTrailer() throws {
        let whole = Fixtures.bytes("animated.gif")
        #expect(throws: Never.self) { try render(whole) }
        for share in [0.97, 0.75, 0.5] {
            let cut = Array(whole.prefix(Int(Double(whole.count) * share)))
            #expect { try render(cut) } throws: { ($0 as? MediaError)?.code == .invalidMedia }
        }
        #expect { try render(Array(whole.dropLast())) } throws: { ($0 as? MediaError)?.code == .invalidMedia }
        // Frames 2 and 3 of a hand-made GIF: an LZW code past the table in the last frame.
        var bytes = Fixtures.gif(width: 1, height: 1, frames: 3)
        #expect(throws: Never.self) { try render(bytes) }
        let last = try #require(bytes.lastIndex(of: 0x2C))  // the last image descriptor
        bytes.replaceSubrange((last + 10)..., with: [2, 2, 0xFF, 0xFF, 0, 0x3B])
        #expect { try render(bytes) } throws: { ($0 as? MediaError)?.code == .invalidMedia }
    }

    /// Later frames are checked by their LZW code streams, without making pixels: a frame needs
    /// its every pixel before its end code or the end of its data; a code may name the entry being
    /// made (its previous string and that string's first pixel) but nothing past it; codes after
    /// the frame is full are not read.
    @Test func laterGIFFramesAreCheckedByTheirCodeStreams() throws {
        /// A GIF `width` x 1 whose frames are the given LZW data (minimum code size, blocks).
        func gif(width: Int, _ frames: [[UInt8]]) -> [UInt8] {
            var b = Array("GIF89a".utf8) + [UInt8(width), 0, 1, 0, 0x80, 0, 0, 0, 0, 0, 255, 255, 255]
            for data in frames { b += [0x2C, 0, 0, 0, 0, UInt8(width), 0, 1, 0, 0x00] + data }
            return b + [0x3B]
        }
        // Codes of 3 bits: clear (4), a pixel (0), end (5); then clear, 0, 6 (the entry being
        // made: two pixels), end.
        let onePixel: [UInt8] = [0x02, 0x02, 0x44, 0x01, 0x00]
        let threePixels: [UInt8] = [0x02, 0x02, 0x84, 0x0B, 0x00]
        #expect(throws: Never.self) { try render(gif(width: 3, [threePixels, threePixels])) }
        #expect(throws: Never.self) { try render(gif(width: 1, [onePixel, threePixels])) }  // more than the frame needs
        for broken in [gif(width: 3, [threePixels, onePixel]),  // the end code before the third pixel
                       gif(width: 3, [threePixels, [0x02, 0x01, 0x84, 0x00]]),  // the data ends first
                       gif(width: 3, [threePixels, [0x02, 0x02, 0xC4, 0x0B, 0x00]])] {  // 7 after 0: past the table
            #expect { try render(broken) } throws: { ($0 as? MediaError)?.code == .invalidMedia }
        }
    }

    func expectNoCrash(_ bytes: [UInt8]) {
        do {
            _ = try render(bytes)
        } catch let error as MediaError {
            #expect([MediaError.Code.invalidMedia, .limitsExceeded].contains(error.code))
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    @Test func headerLimitsRefuseBombsBeforeAllocating() {
        #expect { try pipeline.inspect(Fixtures.pngHeader(width: 100_000, height: 100_000)) } throws: {
            ($0 as? MediaError)?.code == .limitsExceeded
        }
        #expect { try pipeline.inspect(Fixtures.gif(width: 65535, height: 65535, frames: 1)) } throws: {
            ($0 as? MediaError)?.code == .limitsExceeded
        }
        #expect { try pipeline.inspect(Fixtures.gif(frames: 1001)) } throws: { ($0 as? MediaError)?.code == .limitsExceeded }
        #expect(throws: Never.self) { try pipeline.inspect(Fixtures.gif(frames: 1000)) }
    }

    @Test func baselineJPEGCountsAtItsDCTScaleProgressiveAtFullSize() throws {
        // 16000x12000 = 192 MP: a baseline JPEG decodes at 1/8 (3 MP) and is fine; a progressive one is not.
        let baseline = try pipeline.inspect(Fixtures.jpegHeader(width: 16000, height: 12000, progressive: false))
        #expect(pipeline.decodedPixels(baseline, plan: pipeline.plan(baseline, need: 640, boxTarget: 640)) == 2000 * 1500)
        #expect { try pipeline.inspect(Fixtures.jpegHeader(width: 16000, height: 12000, progressive: true)) } throws: {
            ($0 as? MediaError)?.code == .limitsExceeded
        }
    }

    /// 49 MP progressive, counted from the header as the decoder will keep its coefficients: all
    /// of them (4:4:4: 294 MB, over the 256 MiB decoder budget) when the IDCT reads most of each
    /// block, as at 2/8; at 1/8 (a thumbnail) 10 bytes of a block's 128 (23 MB), which goes on to
    /// the decoder. 4:2:0 needs 147 MB at any scale, within the budget.
    @Test func progressiveJPEGCoefficientsAreCountedFromTheHeader() throws {
        let subsampled = try pipeline.inspect(Fixtures.jpegHeader(width: 7000, height: 7000, progressive: true, luma: 0x22))
        #expect(subsampled.coefficientBytes == 876 * 876 * 128 + 2 * 438 * 438 * 128)  // luma padded to whole 16×16 MCUs
        let full = try pipeline.inspect(Fixtures.jpegHeader(width: 7000, height: 7000, progressive: true, luma: 0x11))
        var plan = DecodePlan()
        for (eighths, kept) in [(1, 10), (2, 128), (3, 26), (5, 58), (8, 128)] {
            plan.jpegScaleEighths = eighths
            #expect(ImageCodecs.keptCoefficientBytes(full, plan: plan) == 3 * 875 * 875 * kept)
            #expect(throws: Never.self) { try pipeline.checkDecoderMemory(subsampled, plan: plan) }
        }
        plan.jpegScaleEighths = 1
        #expect(throws: Never.self) { try pipeline.checkDecoderMemory(full, plan: plan) }
        plan.jpegScaleEighths = 2
        #expect { try pipeline.checkDecoderMemory(full, plan: plan) } throws: { ($0 as? MediaError)?.code == .limitsExceeded }
        #expect(pipeline.plan(full, options: RenderOptions(), edge: RenderOptions().displaySize).jpegScaleEighths == 2)
    }

    /// When libjpeg itself runs out of its memory budget (it asks for a backing store), that is
    /// the limit speaking, not a corrupt file.
    @Test func aDecoderOverItsMemoryBudgetIsLimitsExceeded() throws {
        let bytes = Fixtures.bytes("progressive.jpg")
        let header = try pipeline.inspect(bytes)
        #expect(header.coefficientBytes > 64 << 10)
        var small = MediaLimits()
        small.maxDecoderMemory = 64 << 10
        #expect {
            try bytes.withUnsafeBytes { try ImageCodecs.decode($0, format: .jpeg, plan: DecodePlan(), limits: small, abort: AbortFlag()) }
        } throws: { ($0 as? MediaError)?.code == .limitsExceeded }
    }

    @Test func decodesTheFirstGIFFrameOfAHandMadeFile() throws {
        let r = try render(Fixtures.gif(width: 1, height: 1, frames: 3))
        #expect((r.thumbnail.width, r.thumbnail.height) == (1, 1))
    }

    @Test func aGIFsTransparentIndexKeepsAlphaOnlyWhenAPixelUsesIt() throws {
        let used = try render(Fixtures.gif(frames: 1, transparentIndex: 0))
        #expect(used.thumbnail.format == .png)
        let unused = try render(Fixtures.gif(frames: 1, transparentIndex: 1))
        #expect(unused.thumbnail.format == .jpeg)
    }

    @Test func unsupportedKindsAreRefused() {
        #expect { try pipeline.inspect(Fixtures.bytes("clip.mp4")) } throws: { ($0 as? MediaError)?.code == .unsupportedType }
        #expect { try pipeline.inspect(Array("<html>".utf8)) } throws: { ($0 as? MediaError)?.code == .unsupportedType }
    }

    @Test func anAbortStopsTheDecoder() throws {
        let bytes = Fixtures.bytes("photo.jpg")
        let abort = AbortFlag()
        abort.set()
        #expect(throws: CancellationError.self) {
            try pipeline.render(bytes, header: try pipeline.inspect(bytes), options: RenderOptions(), abort: abort)
        }
    }

    @Test func plansReduceToAtLeastTheTarget() throws {
        let header = try pipeline.inspect(Fixtures.jpegHeader(width: 4000, height: 3000, progressive: false))
        let plan = pipeline.plan(header, need: 640, boxTarget: 640)
        #expect(plan.jpegScaleEighths == 2)  // 1000 px, and 1/8 would be 500 < 640
        #expect(plan.boxShrink == 1)
        let png = ImageHeader(format: .png, width: 6000, height: 4000, orientation: 1, progressive: false, frames: 1, hasAlpha: false)
        let p = pipeline.plan(png, need: 640, boxTarget: 640)
        #expect(p.boxShrink == 9)
        #expect((6000 + p.boxShrink - 1) / p.boxShrink >= 640)
    }

    /// A JPEG's IDCT scales to the smallest n/8 that still gives the largest rendition (the
    /// display copy), not to twice the thumbnail; a thumbnail alone decodes to 1/8 when that is
    /// at least the thumbnail. A baseline JPEG goes on to the next of 1/8, 2/8, 4/8 and 8/8
    /// (libjpeg-turbo's SIMD IDCTs) unless that is over the pixel budget; a progressive one,
    /// which holds its coefficients, does not.
    @Test func aJPEGDecodesAtTheSmallestScaleItsRenditionsNeed() throws {
        let header = try pipeline.inspect(Fixtures.jpegHeader(width: 3840, height: 2400, progressive: false))
        let both = pipeline.plan(header, options: RenderOptions(), edge: 1080)
        #expect(both.jpegScaleEighths == 4)  // 3/8 (1440 px) would do; 1/4 would be 960 < 1080
        #expect(both.boxShrink == 1)
        let thumbnailOnly = pipeline.plan(header, options: RenderOptions(), edge: 0)
        #expect(thumbnailOnly.jpegScaleEighths == 1)  // 480 px >= 320
        #expect(thumbnailOnly.boxShrink == 1)
        // A thumbnail of a quarter of the width needs 1280 px of the whole: 3/8, so 4/8.
        let clipped = pipeline.plan(header, options: RenderOptions(clip: .init(x: 0, y: 0, width: 0.25, height: 0.25)), edge: 0)
        #expect(clipped.jpegScaleEighths == 4)
        let android = pipeline.plan(header, options: RenderOptions(androidSize: 2000), edge: 1080)
        #expect(android.jpegScaleEighths == 8)  // 5/8 (2400 px) would do; 4/8 is 1920 < 2000
        let progressive = try pipeline.inspect(Fixtures.jpegHeader(width: 3840, height: 2400, progressive: true))
        #expect(pipeline.plan(progressive, options: RenderOptions(), edge: 1080).jpegScaleEighths == 3)
        // 6400 px of a 20000 px photo: 3/8 is 42 MP; 4/8 would be 75, over the 50 MP budget.
        let huge = try pipeline.inspect(Fixtures.jpegHeader(width: 20000, height: 15000, progressive: false))
        let sliver = pipeline.plan(huge, options: RenderOptions(clip: .init(x: 0, y: 0, width: 0.05, height: 0.05)), edge: 0)
        #expect(sliver.jpegScaleEighths == 3)
    }
}

/// The resampler on synthetic images: weights that sum to one, channels that never mix, and the
/// premultiplied bound, for the vectorised 3- and 4-channel paths and the generic one.
@Suite(.onTestThreads) struct ResampleTests {
    func image(_ width: Int, _ height: Int, _ channels: Int, _ sample: (Int, Int, Int) -> UInt8) -> Pixels {
        var samples: [UInt8] = []
        for y in 0..<height { for x in 0..<width { for c in 0..<channels { samples.append(sample(x, y, c)) } } }
        return Pixels(width: width, height: height, channels: channels, samples: samples)
    }

    @Test(arguments: [1, 3, 4], [(97, 61, 31, 17), (10, 10, 23, 23), (640, 400, 320, 200)])
    func aFlatColourStaysFlat(_ channels: Int, _ sizes: (Int, Int, Int, Int)) throws {
        let colour: [UInt8] = [200, 17, 99, 230]
        let out = try ImageCodecs.resize(image(sizes.0, sizes.1, channels) { _, _, c in colour[c] }, width: sizes.2, height: sizes.3)
        #expect((out.width, out.height) == (sizes.2, sizes.3))
        let flat = colour.prefix(channels).map(Int.init)
        let off = (0..<out.height).flatMap { y in (0..<out.width).filter { out.channelValues(x: $0, y: y) != flat }.map { ($0, y) } }
        #expect(off.isEmpty, "\(off.count) pixels differ, the first at \(off.first.map { "\($0)" } ?? "")")
    }

    @Test(arguments: [3, 4])
    func channelsNeverMix(_ channels: Int) throws {
        // Red rises left to right, green is constant, blue falls, alpha (if any) is opaque.
        let source = image(300, 40, channels) { x, _, c in
            switch c {
            case 0: UInt8(x * 255 / 299)
            case 1: 128
            case 2: UInt8(255 - x * 255 / 299)
            default: 255
            }
        }
        let out = try ImageCodecs.resize(source, width: 97, height: 13)
        for y in 0..<out.height {
            var last = out.channelValues(x: 0, y: y)
            for x in 1..<out.width {
                let v = out.channelValues(x: x, y: y)
                #expect(v[0] >= last[0] && v[2] <= last[2])
                #expect(v[1] == 128 && abs(v[0] + v[2] - 255) <= 1)
                if channels == 4 { #expect(v[3] == 255) }
                last = v
            }
        }
    }

    @Test func premultipliedColourNeverExceedsAlpha() throws {
        // Sharp edges between opaque white and transparent black: the kernel's negative lobes
        // overshoot, and the clamp must keep every colour at or under its alpha.
        let source = image(64, 64, 4) { x, y, _ in (x / 8 + y / 8) % 2 == 0 ? 255 : 0 }
        for size in [(23, 23), (150, 150)] {
            let out = try ImageCodecs.resize(source, width: size.0, height: size.1)
            for y in 0..<out.height {
                for x in 0..<out.width {
                    let v = out.channelValues(x: x, y: y)
                    #expect(v[0] <= v[3] && v[1] <= v[3] && v[2] <= v[3])
                }
            }
        }
    }
}

extension Pixels {
    func pixel(x: Int, y: Int) -> (r: Int, g: Int, b: Int, a: Int) {
        let v = channelValues(x: x, y: y)
        return (v[0], v[1], v[2], v.count > 3 ? v[3] : 255)
    }
}

/// A PNG's chunks, to make variants of a file (their CRCs made right).
struct PNGChunks {
    var chunks: [(type: String, data: [UInt8])]

    init(_ bytes: [UInt8]) {
        chunks = []
        var at = 8
        while at + 12 <= bytes.count {
            let length = Int(bytes[at]) << 24 | Int(bytes[at + 1]) << 16 | Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
            let type = String(decoding: bytes[(at + 4)..<(at + 8)], as: UTF8.self)
            chunks.append((type, Array(bytes[(at + 8)..<(at + 8 + length)])))
            at += 12 + length
        }
    }

    var bytes: [UInt8] {
        var out: [UInt8] = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]
        for (type, data) in chunks {
            let body = Array(type.utf8) + data
            out += Self.bigEndian(UInt32(data.count)) + body + Self.bigEndian(Self.crc32(body))
        }
        return out
    }

    func count(_ type: String) -> Int { chunks.filter { $0.type == type }.count }

    /// Where the `index`th IDAT chunk's data is in `bytes`.
    func dataRange(ofIDAT index: Int) -> Range<Int> {
        var at = 8, seen = 0
        for (type, data) in chunks {
            if type == "IDAT" {
                if seen == index { return (at + 8)..<(at + 8 + data.count) }
                seen += 1
            }
            at += 12 + data.count
        }
        return 0..<0
    }

    func joiningIDAT() -> [UInt8] {
        let data = chunks.filter { $0.type == "IDAT" }.flatMap(\.data)
        var copy = self
        let first = chunks.firstIndex { $0.type == "IDAT" }!
        copy.chunks.removeAll { $0.type == "IDAT" }
        copy.chunks.insert(("IDAT", data), at: first)
        return copy.bytes
    }

    func withEmptyIDATFirst() -> [UInt8] {
        var copy = self
        copy.chunks.insert(("IDAT", []), at: chunks.firstIndex { $0.type == "IDAT" }!)
        return copy.bytes
    }

    mutating func replaceIDATData(_ change: (inout [UInt8]) -> Void) {
        let index = chunks.firstIndex { $0.type == "IDAT" }!
        change(&chunks[index].data)
    }

    mutating func replaceHeight(_ height: UInt32) {
        chunks[0].data.replaceSubrange(4..<8, with: Self.bigEndian(height))
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] { [UInt8(value >> 24), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)] }

    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xffff_ffff
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? 0xedb8_8320 ^ (crc >> 1) : crc >> 1 }
        }
        return ~crc
    }
}
