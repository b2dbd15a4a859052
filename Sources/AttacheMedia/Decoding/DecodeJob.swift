import AttachePayload
import AttacheSupport

/// One piece of work on downloaded bytes: everything that parses them (header inspection,
/// decoding, probing, poster frames) is a job, so that it can run in this process or in a
/// sandboxed helper (`attache-decode`) with the same code. The bytes are an array or a mapped
/// file (a download that spilled to disk): a file is parsed where it is, and a helper is handed
/// its descriptor, not a copy of its bytes.
public enum DecodeJob: Sendable {
    /// Inspect the header (every limit before a pixel), decode, render thumbnail and display copy.
    case image(bytes: MappedBytes, format: MediaFormat?, options: RenderOptions, limits: MediaLimits)
    /// Probe, judge and make the poster-frame thumbnail (`time` as `VideoPipeline.render` takes it).
    case movie(bytes: MappedBytes, format: MediaFormat?, options: RenderOptions, time: Double?, posterMode: PosterMode, limits: MediaLimits)
    /// The facts and the verdict only.
    case probe(bytes: MappedBytes, limits: MediaLimits)

    /// Work that may hold a decoder for seconds: a movie or sound (a poster decoded forward, a
    /// conversion), or an image that may be an animation of many frames (a GIF, WebP or AVIF over
    /// 256 KB, whose conversion to a movie decodes every frame). A decoder pool keeps one helper
    /// out of such work, for everything else.
    public var isHeavy: Bool {
        switch self {
        case .movie: return true
        case .probe: return false
        case let .image(bytes, format, _, _):
            guard let format, format == .gif || format == .webp || format == .avif else { return false }
            return bytes.count > 256 << 10
        }
    }

    public var bytes: MappedBytes {
        switch self {
        case .image(let bytes, _, _, _), .movie(let bytes, _, _, _, _, _), .probe(let bytes, _): return bytes
        }
    }

    /// Runs the job here, on the calling thread; `abort` stops the decoders between rows.
    public func perform(abort: AbortFlag = AbortFlag()) throws -> DecodeResult {
        switch self {
        case let .image(bytes, format, options, limits):
            return try bytes.withUnsafeBytes { bytes in
                let pipeline = ImagePipeline(limits: limits)
                let start = ContinuousClock.now
                let header = try pipeline.inspect(bytes, format: format)
                let rendering = ContinuousClock.now
                let rendition = try pipeline.render(bytes, header: header, options: options, abort: abort, mapped: self.bytes.isMapped)
                return .image(rendition, inspectMs: start.duration(to: rendering).milliseconds,
                              renderMs: rendering.duration(to: .now).milliseconds)
            }
        case let .movie(bytes, format, options, time, posterMode, limits):
            let pipeline = VideoPipeline(limits: limits, posterMode: posterMode)
            return .movie(try bytes.withUnsafeBytes { try pipeline.render($0, format: format, options: options, time: time, abort: abort) })
        case let .probe(bytes, limits):
            return .probe(try bytes.withUnsafeBytes { try VideoPipeline(limits: limits).probe($0, abort: abort) })
        }
    }
}

public enum DecodeResult: Sendable {
    case image(ImageRendition, inspectMs: Double, renderMs: Double)
    case movie(MovieRendition)
    case probe(MediaFacts)
}

/// Where jobs run: `InProcessDecoder` (threads of this process) or a pool of sandboxed helper
/// processes (AttacheIsolation's `DecoderPool`). Either way a job's media error is a `MediaError`
/// and a job cancelled by its task (the payload's deadline) ends at once with `CancellationError`.
public protocol MediaDecoder: Sendable {
    func decode(_ job: DecodeJob) async throws -> DecodeResult
}

extension MediaDecoder {
    public func image(_ bytes: [UInt8], format: MediaFormat?, options: RenderOptions, limits: MediaLimits) async throws -> (rendition: ImageRendition, inspectMs: Double, renderMs: Double) {
        try await image(.memory(bytes), format: format, options: options, limits: limits)
    }

    public func movie(_ bytes: [UInt8], format: MediaFormat?, options: RenderOptions, time: Double?, posterMode: PosterMode,
                      limits: MediaLimits) async throws -> MovieRendition {
        try await movie(.memory(bytes), format: format, options: options, time: time, posterMode: posterMode, limits: limits)
    }

    public func probe(_ bytes: [UInt8], limits: MediaLimits) async throws -> MediaFacts {
        try await probe(.memory(bytes), limits: limits)
    }

    public func image(_ bytes: MappedBytes, format: MediaFormat?, options: RenderOptions, limits: MediaLimits) async throws -> (rendition: ImageRendition, inspectMs: Double, renderMs: Double) {
        guard case let .image(rendition, inspectMs, renderMs) = try await decode(.image(bytes: bytes, format: format, options: options, limits: limits)) else {
            throw MediaError(.invalidMedia, "the decoder answered an image job with another kind of result")
        }
        return (rendition, inspectMs, renderMs)
    }

    public func movie(_ bytes: MappedBytes, format: MediaFormat?, options: RenderOptions, time: Double?, posterMode: PosterMode,
                      limits: MediaLimits) async throws -> MovieRendition {
        guard case let .movie(rendition) = try await decode(.movie(bytes: bytes, format: format, options: options, time: time,
                                                                  posterMode: posterMode, limits: limits)) else {
            throw MediaError(.invalidMedia, "the decoder answered a movie job with another kind of result")
        }
        return rendition
    }

    public func probe(_ bytes: MappedBytes, limits: MediaLimits) async throws -> MediaFacts {
        guard case let .probe(facts) = try await decode(.probe(bytes: bytes, limits: limits)) else {
            throw MediaError(.invalidMedia, "the decoder answered a probe job with another kind of result")
        }
        return facts
    }
}

/// Jobs on a `BlockingPool` of this process: no isolation, no process hop. What one-shot commands
/// use by default (a helper per run would cost more than it protects), and extensions embedding
/// Attache as a library.
public struct InProcessDecoder: MediaDecoder {
    public let pool: BlockingPool

    public init(pool: BlockingPool = .shared) {
        self.pool = pool
    }

    public func decode(_ job: DecodeJob) async throws -> DecodeResult {
        try await pool.run { abort in try job.perform(abort: abort) }
    }
}
