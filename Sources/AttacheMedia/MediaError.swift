import AttachePayload

/// Why media cannot be attached: a code from a fixed set, and a message for people.
public struct MediaError: Error, Sendable, CustomStringConvertible {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        /// `package`: Attache converts codes to reasons with an exhaustive switch.
        package enum Base: String, Sendable, Hashable {
            case unsupportedType = "unsupported-type"
            case invalidMedia = "invalid-media"
            case limitsExceeded = "limits-exceeded"
            case tooLarge = "too-large"
        }
        package let base: Base
        package init(_ base: Base) { self.base = base }
        /// A kind iOS cannot show (WebP, HEIC, an HTML page…).
        public static let unsupportedType = Code(.unsupportedType)
        /// Truncated, corrupt, or not what it claims.
        public static let invalidMedia = Code(.invalidMedia)
        /// Pixels, frames, scans or memory over the configured limits.
        public static let limitsExceeded = Code(.limitsExceeded)
        /// Bytes over Apple's cap for the kind.
        public static let tooLarge = Code(.tooLarge)
        public var description: String { base.rawValue }
    }

    /// What a report adds to the code when it helps tell cases apart: the decoder process, not
    /// the file, is why it failed.
    public enum Detail: String, Sendable, CustomStringConvertible {
        /// The decoder process died on the file (a crash, a forbidden call), rather than refusing it.
        case decoderCrashed = "decoder-crashed"
        /// Decoding used more CPU than one job may.
        case decoderCPULimit = "decoder-cpu-limit"
        /// No decoder process could be started.
        case decoderUnavailable = "decoder-unavailable"

        public var description: String { rawValue }
    }

    public let code: Code
    public let message: String
    public let detail: Detail?

    public init(_ code: Code, _ message: String, detail: Detail? = nil) {
        self.code = code
        self.message = message
        self.detail = detail
    }

    public var description: String { "\(code): \(message)" }
}

/// Limits checked before pixels are allocated, and Apple's size caps per kind.
public struct MediaLimits: Sendable, Hashable {
    public var maxPixels: Int
    public var maxGIFFrames: Int
    public var maxProgressiveScans: Int
    public var maxDecoderMemory: Int
    public var imageBytes: Int
    public var audioBytes: Int
    public var videoBytes: Int
    /// Pixels per video frame (8K), enforced by the decoder too.
    public var maxVideoPixels: Int
    /// Longest clip, in seconds.
    public var maxDuration: Double
    public var maxStreams: Int

    public init(
        maxPixels: Int = 50_000_000,
        maxGIFFrames: Int = 1000,
        maxProgressiveScans: Int = 100,
        maxDecoderMemory: Int = 256 << 20,
        imageBytes: Int = 10_000_000,
        audioBytes: Int = 5_000_000,
        videoBytes: Int = 50_000_000,
        maxVideoPixels: Int = 7680 * 4320,
        maxDuration: Double = 600,
        maxStreams: Int = 16
    ) {
        self.maxPixels = maxPixels
        self.maxGIFFrames = maxGIFFrames
        self.maxProgressiveScans = maxProgressiveScans
        self.maxDecoderMemory = maxDecoderMemory
        self.imageBytes = imageBytes
        self.audioBytes = audioBytes
        self.videoBytes = videoBytes
        self.maxVideoPixels = maxVideoPixels
        self.maxDuration = maxDuration
        self.maxStreams = maxStreams
    }

    public func byteCap(for kind: MediaKind) -> Int {
        switch kind {
        case .image: return imageBytes
        case .audio: return audioBytes
        case .video: return videoBytes
        }
    }
}

/// Runs `body` on an array's bytes, keeping `body`'s typed error.
func withBytes<R>(_ bytes: [UInt8], _ body: (UnsafeRawBufferPointer) throws(MediaError) -> R) throws(MediaError) -> R {
    let result: Result<R, MediaError> = bytes.withUnsafeBytes { b in
        do throws(MediaError) { return .success(try body(b)) } catch { return .failure(error) }
    }
    return try result.get()
}
