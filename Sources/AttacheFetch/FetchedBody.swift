import AttacheSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A downloaded body: in memory when small, else in a temp file that is removed when the last
/// reference goes away — on success, failure and cancellation alike.
public final class FetchedBody: @unchecked Sendable {
    // Written only by the engine thread while the transfer runs; read-only once handed out.
    private var memory: [UInt8] = []
    private var fd: Int32 = -1
    public private(set) var path: String?
    public private(set) var count: Int = 0
    private let threshold: Int
    private let directory: String

    init(threshold: Int, directory: String) {
        self.threshold = threshold
        self.directory = directory
    }

    public convenience init(bytes: [UInt8]) {
        self.init(threshold: Int.max, directory: "")
        memory = bytes
        count = bytes.count
        prefix = Array(bytes.prefix(512))
    }

    /// SHA-256 of the whole body, hex, once the transfer is done: computed when first asked for
    /// (from memory, or the file mapped), as only a body stored as it came needs one. Hashing as
    /// the bytes arrived cost every 9 MP JPEG 5 ms of a service's CPU for a name that its display
    /// copy, not the body, is stored under. Blocks: call it off the cooperative pool.
    public func sha256() throws -> String {
        try body.withUnsafeBytes { try SHA256Hasher.hex($0) }
    }

    /// Prepares for a body whose length the server declared: memory reserved when it will stay
    /// in memory, so it is not copied again and again as it grows; the temp file at once when it
    /// will not, so the part under the threshold is not gathered in memory first.
    func expect(_ length: Int) {
        guard path == nil else { return }
        if length <= threshold {
            if length > memory.count { memory.reserveCapacity(length) }
        } else {
            failed = !spill()
        }
    }

    /// The temp file could not be made or written when `expect` spilled: the next append says so.
    private var failed = false

    /// Appends received bytes; returns false when the temp file cannot be written.
    func append(_ pointer: UnsafeRawBufferPointer) -> Bool {
        if failed { return false }
        if prefix.count < 512 { prefix.append(contentsOf: pointer.prefix(512 - prefix.count)) }
        count += pointer.count
        if path == nil && memory.count + pointer.count <= threshold {
            memory.append(contentsOf: pointer)
            return true
        }
        if path == nil && !spill() { return false }
        return writeAll(fd: fd, pointer)
    }

    /// Moves the body to a temp file: what has arrived in memory is written there, the rest
    /// follows it. False when the file cannot be made or written.
    private func spill() -> Bool {
        guard let (descriptor, made) = makeTempFile(in: directory, prefix: "fetch") else { return false }
        fd = descriptor
        path = made
        let ok = memory.withUnsafeBytes { writeAll(fd: fd, $0) }
        memory = []
        return ok
    }

    /// The first bytes received (up to 512), for sniffing without reading the body back.
    public private(set) var prefix: [UInt8] = []

    /// Closes the file once the transfer is done writing.
    func finishWriting() {
        if fd >= 0 { close(fd); fd = -1 }
    }

    /// The whole body as bytes (a copy of the temp file when there is one).
    public func readAll() throws -> [UInt8] {
        try body.array
    }

    /// The body where it is, once the transfer is done: the bytes in memory, or the temp file
    /// mapped (never read into memory: a decoder reads it in place, a helper is handed the file).
    public var body: MappedBytes {
        get throws {
            guard let path else { return .memory(memory) }
            let file: InputFile
            do { file = try InputFile(path) } catch { throw FetchError(.fetchFailed, "temp file vanished") }
            guard file.count == count else { throw FetchError(.fetchFailed, "temp file shorter than received") }
            return .file(file)
        }
    }

    deinit {
        if fd >= 0 { close(fd) }
        if let path { unlink(path) }
    }
}
