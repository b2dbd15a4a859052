import AttacheSupport

/// An animated WebP or AVIF, which iOS does not show, or a GIF over Apple's image cap, as an H.264
/// movie (`movie`, with a GIF copy of a small WebP or AVIF) or, when movies are not made, as an
/// animated GIF that iOS shows (`render`): at most the display size, and within the cap — a first
/// try that comes out too large is redone smaller (by the measured overshoot) and, when that is
/// not enough, with every other frame (their time kept). When nothing fits, a still of the first
/// frame (`render`), or no copy (`movie`).
struct AnimationConverter {
    let pipeline: ImagePipeline
    let header: ImageHeader
    let options: RenderOptions
    let abort: AbortFlag

    /// Tries before settling for a still; the smallest edge worth animating.
    private static let attempts = 4
    private static let smallestEdge = 64
    /// A movie in a notification plays once, where the animation it came from loops: a short one
    /// is written again after itself (its packets repeated, not encoded again) until it plays at
    /// least this long.
    static let playsAtLeast = 5.0

    /// An H.264 movie of every frame, each shown for its own time (the last one too), at most the
    /// movie edge, looped to `playsAtLeast`: what iOS plays in the expanded notification, a
    /// fraction of a big GIF's bytes. The thumbnail is the first frame.
    func movie(_ bytes: UnsafeRawBufferPointer, settings: TranscodeSettings) throws -> ImageRendition {
        guard framePixels <= Self.mostFramePixels else {
            throw MediaError(.limitsExceeded, "\(header.frames) frames of \(header.width)x\(header.height) are \(framePixels / 1_000_000) million pixels to decode, "
                + "over the \(Self.mostFramePixels / 1_000_000) million an animation may have to be made a movie")
        }
        let edge = min(max(header.width, header.height), settings.maxEdge)
        let plan = pipeline.plan(header, options: options, edge: edge)
        let frames = try ImageCodecs.Frames(bytes, format: header.format, plan: plan, limits: pipeline.limits, abort: abort)
        // Frames are decoded and sized on a second thread while this one encodes those before
        // them: decoding is most of the work that is not the encoder's, and the encoder's own
        // threads leave a core room for it. A few frames ahead at most (each is a whole canvas).
        let handoff = Handoff<(first: Pixels?, sized: Pixels, milliseconds: Int)>(capacity: 3)
        let (_, (first, writer, count)) = try concurrently({
            defer { handoff.close() }
            var index = 0
            while let (pixels, milliseconds) = try frames.next() {
                let sized = try pipeline.sized(pixels, clip: nil, edge: edge, orientation: header.orientation)
                guard handoff.put((index == 0 ? pixels : nil, sized, milliseconds)) else { return }
                index += 1
            }
        }, {
            // The decoding stops when encoding fails.
            defer { handoff.close() }
            var writer: VideoCodecs.MovieWriter?
            var first: Pixels?
            var count = 0
            while let (pixels, sized, milliseconds) = handoff.take() {
                if first == nil { first = pixels }
                if writer == nil {
                    // The length is known only at the end: the first frame's time for each frame is the guess.
                    let seconds = Double(max(milliseconds, 20) * header.frames) / 1000
                    writer = try VideoCodecs.MovieWriter(plan: TranscodePlanner.animation(width: sized.width, height: sized.height, frames: header.frames,
                                                                                          seconds: seconds, settings: settings), abort: abort)
                }
                try writer?.add(sized, milliseconds: milliseconds)
                count += 1
            }
            return (first, writer, count)
        })
        guard let first, let writer else { throw MediaError(.invalidMedia, "\(header.format.rawValue): an animation without frames") }
        let movie = try writer.finish(playing: Self.playsAtLeast)
        let display = RenderedImage(bytes: movie.bytes, format: .mp4, width: movie.width, height: movie.height, frames: count * movie.loops)
        var rendition = try pipeline.finish(header: header, firstFrame: first, display: display, options: options)
        if keepsGIFCopy { rendition.gif = try fittingGIF(bytes)?.gif }
        return rendition
    }

    /// The most pixels an animation's frames may add up to, as decoded (the whole canvas, every
    /// frame), for it to be converted: the cost is known from the header before a frame is
    /// decoded. 600 million is a few seconds of a decoder helper (500 frames of 2000x2000 are
    /// 2,000 million, the better part of the CPU limit): past it a movie is refused
    /// (`limits-exceeded`), and a GIF fitted to the cap is a still of the first frame instead.
    static let mostFramePixels = 600_000_000

    private var framePixels: Int {
        header.width * header.height * max(header.frames, 1)
    }

    /// The most pixels, all frames together at the display size, of an animation given a GIF copy:
    /// a GIF's palettes take about 50 ns a pixel here, so about a second's work.
    static let mostGIFCopyPixels = 20_000_000

    /// A GIF copy is kept when asked for and when one can be made cheaply: from an animated WebP
    /// or AVIF (a GIF over the cap has none: it did not fit, and fitting it would take seconds),
    /// of few pixels.
    private var keepsGIFCopy: Bool {
        guard options.keepsGIFCopy, header.format != .gif else { return false }
        let scale = min(1, Double(options.displaySize) / Double(max(header.width, header.height, 1)))
        let pixels = Double(header.width) * Double(header.height) * scale * scale * Double(max(header.frames, 1))
        return pixels <= Double(Self.mostGIFCopyPixels)
    }

    func render(_ bytes: UnsafeRawBufferPointer) throws -> ImageRendition {
        if framePixels <= Self.mostFramePixels, let (gif, first) = try fittingGIF(bytes) {
            return try pipeline.finish(header: header, firstFrame: first, display: gif, options: options)
        }
        let plan = pipeline.plan(header, options: options, edge: options.displaySize)
        let first = try ImageCodecs.decode(bytes, format: header.format, plan: plan, limits: pipeline.limits, abort: abort)
        let still = try pipeline.encode(pipeline.sized(first, clip: nil, edge: options.displaySize, orientation: header.orientation),
                                        quality: options.jpegQuality)
        return try pipeline.finish(header: header, firstFrame: first, display: still, options: options)
    }

    /// The animation as a GIF within the image cap, with its first frame; nil when no try fits.
    private func fittingGIF(_ bytes: UnsafeRawBufferPointer) throws -> (gif: RenderedImage, first: Pixels)? {
        let budget = pipeline.limits.imageBytes
        var edge = min(max(header.width, header.height), options.displaySize)
        var step = 1
        for _ in 0..<Self.attempts {
            switch try animate(bytes, edge: edge, step: step, budget: budget) {
            case .made(let gif, let first):
                return (gif, first)
            case .tooLarge(let estimate):
                let ratio = Double(budget) / Double(max(estimate, 1)) * 0.85
                if ratio < 0.5 && header.frames / step >= 4 {
                    step *= 2
                    edge = Int(Double(edge) * (ratio * 2).squareRoot())
                } else {
                    edge = Int(Double(edge) * ratio.squareRoot())
                }
            }
            if edge < Self.smallestEdge { break }
        }
        return nil
    }

    private enum Attempt {
        case made(gif: RenderedImage, first: Pixels)
        /// What the whole GIF would have taken, estimated from the frames written when it stopped.
        case tooLarge(estimate: Int)
    }

    /// Every `step`-th frame, fitted to `edge`, each shown for its own time and that of the frames
    /// skipped after it.
    private func animate(_ bytes: UnsafeRawBufferPointer, edge: Int, step: Int, budget: Int) throws -> Attempt {
        let plan = pipeline.plan(header, options: options, edge: edge)
        let frames = try ImageCodecs.Frames(bytes, format: header.format, plan: plan, limits: pipeline.limits, abort: abort)
        var writer: ImageCodecs.GIFWriter?
        var first: Pixels?
        var pending: (pixels: Pixels, milliseconds: Int)?
        var index = 0, written = 0

        func write(_ frame: (pixels: Pixels, milliseconds: Int)) throws {
            if writer == nil { writer = try ImageCodecs.GIFWriter(width: frame.pixels.width, height: frame.pixels.height) }
            // GIF counts in hundredths; browsers and iOS show under 2 as 10, so 2 is the least.
            try writer?.add(frame.pixels, centiseconds: max(2, (frame.milliseconds + 5) / 10))
            written += 1
        }

        while let (pixels, milliseconds) = try frames.next() {
            if first == nil { first = pixels }
            if index % step == 0 {
                if let pending { try write(pending) }
                pending = (try pipeline.sized(pixels, clip: nil, edge: edge, orientation: header.orientation), milliseconds)
            } else {
                pending?.milliseconds += milliseconds
            }
            index += 1
            if let size = writer?.byteCount, size > budget {
                return .tooLarge(estimate: size * max(header.frames, index) / index)
            }
        }
        if let pending { try write(pending) }
        guard let first, let writer else { throw MediaError(.invalidMedia, "\(header.format.rawValue): an animation without frames") }
        let gif = try writer.finish()
        if gif.count > budget { return .tooLarge(estimate: gif.count) }
        let sized = pending?.pixels
        let display = RenderedImage(bytes: gif, format: .gif, width: sized?.width ?? first.width, height: sized?.height ?? first.height,
                                    frames: written)
        return .made(gif: display, first: first)
    }
}
