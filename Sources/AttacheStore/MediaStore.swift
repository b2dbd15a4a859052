import AttacheSupport

/// Where validated media and renditions go: a directory (`FileStore`) or an S3-compatible bucket
/// (`S3Store`). Async: a network store must not hold a thread per upload.
public protocol MediaStore: Sendable {
    /// Stores bytes under a content-addressed name (`<sha256>.<ext>`) and returns where devices
    /// read it, once the write is confirmed and durable — never before. Storing the same bytes
    /// twice is harmless and returns the same name. `file`: the bytes are in that file already (a
    /// body spilled to the scratch space), which a file store can take as it is. Gives up by
    /// `deadline` (store-failed), whatever the store is doing.
    func put(_ bytes: [UInt8], fileExtension: String, sha256: String, file: String?,
             deadline: ContinuousClock.Instant) async throws -> StoredMedia

    /// What every URL `put` returns starts with (the public base URL and prefix, or `file://` and
    /// the directory): a result recorded under one base is never answered under another.
    var urlBase: String { get }

    /// Nil when the store can take writes now; else why not (what `/readyz` says).
    func unavailability() async -> String?

    /// A small record kept beside the media (`results/<name>`): what a URL rendered to, so that
    /// another replica sharing the store need not fetch it again. Nil when there is none, or it
    /// cannot be read in time (a record is an optimisation, never a reason to fail).
    func record(named name: String, deadline: ContinuousClock.Instant) async -> [UInt8]?

    /// Writes a record (after the media it names is stored).
    func putRecord(_ bytes: [UInt8], named name: String, deadline: ContinuousClock.Instant) async throws
}

extension MediaStore {
    /// Hashes the bytes itself; for callers without a deadline of their own, 30 s.
    public func put(_ bytes: [UInt8], fileExtension: String,
                    deadline: ContinuousClock.Instant = .now + .seconds(30)) async throws -> StoredMedia {
        try await put(bytes, fileExtension: fileExtension, sha256: try SHA256Hasher.hex(bytes), file: nil, deadline: deadline)
    }
}

public struct StoredMedia: Sendable, Equatable {
    /// `<sha256>.<ext>`
    public var name: String
    /// A URL a device (or a test) can read it from: `BASE/<name>` or `file://…`.
    public var url: String

    /// The Content-Type each stored extension is served (and uploaded) with.
    public static let contentTypes: [String: String] = [
        "jpg": "image/jpeg", "png": "image/png", "gif": "image/gif", "mp4": "video/mp4", "mov": "video/quicktime",
        "m4a": "audio/mp4", "mp3": "audio/mpeg", "wav": "audio/wav", "aiff": "audio/aiff", "avi": "video/x-msvideo",
        "mpg": "video/mpeg",
    ]

    /// What a device may cache it for: the name is the content's hash, so it never changes.
    public static let cacheControl = "public, max-age=31536000, immutable"
}

/// Why a store did not take (or cannot take) what it was given: a code a caller can act on, the
/// object's key and the store's answer where there was one, and the words for people.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// The store's settings cannot work (credentials missing, not a URL, not a directory).
        case misconfigured
        /// The object store answered, and not with a confirmation (`status` says what).
        case refused
        /// The object store could not be reached, or the transfer failed.
        case unreachable
        /// The deadline passed before the write was durable.
        case deadlinePassed = "deadline-passed"
        /// The file system refused (permissions, space).
        case fileSystem = "file-system"
    }

    public let code: Code
    public let message: String
    /// The object's key (or the file's name), when the error is about one.
    public let key: String?
    /// The object store's HTTP status, when it answered.
    public let status: Int?

    public init(_ code: Code, _ message: String, key: String? = nil, status: Int? = nil) {
        self.code = code
        self.message = message
        self.key = key
        self.status = status
    }

    public var description: String { message }
}
