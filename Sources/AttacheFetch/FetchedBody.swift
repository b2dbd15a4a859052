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
    /// Nil only if libcrypto could not make a context: the store then hashes the bytes itself.
    private let hasher = try? SHA256()

    init(threshold: Int, directory: String) {
        self.threshold = threshold
        self.directory = directory
    }

    public convenience init(bytes: [UInt8]) {
        self.init(threshold: Int.max, directory: "")
        memory = bytes
        count = bytes.count
        prefix = Array(bytes.prefix(512))
        hasher?.update(bytes)
    }

    /// SHA-256 of the whole body, hex, computed as the bytes arrived (read once the transfer is
    /// done); nil when it could not be.
    public var sha256: String? { try? hasher?.hex }

    /// Reserves memory for a body whose length the server declared, when it will stay in memory,
    /// so it is not copied again and again as it grows.
    func expect(_ length: Int) {
        if fd < 0 && length > memory.count && length <= threshold { memory.reserveCapacity(length) }
    }

    /// Appends received bytes; returns false when the temp file cannot be written.
    func append(_ pointer: UnsafeRawBufferPointer) -> Bool {
        if prefix.count < 512 { prefix.append(contentsOf: pointer.prefix(512 - prefix.count)) }
        count += pointer.count
        hasher?.update(pointer)
        if fd < 0 && memory.count + pointer.count <= threshold {
            memory.append(contentsOf: pointer)
            return true
        }
        if fd < 0 {
            guard openTempFile() else { return false }
            let ok = memory.withUnsafeBytes { writeAll(fd: fd, $0) }
            memory = []
            guard ok else { return false }
        }
        return writeAll(fd: fd, pointer)
    }

    private func openTempFile() -> Bool {
        guard let (descriptor, made) = makeTempFile(in: directory, prefix: "fetch") else { return false }
        fd = descriptor
        path = made
        return true
    }

    /// The first bytes received (up to 512), for sniffing without reading the body back.
    public private(set) var prefix: [UInt8] = []

    /// Closes the file once the transfer is done writing.
    func finishWriting() {
        if fd >= 0 { close(fd); fd = -1 }
    }

    /// The whole body as bytes (reads the temp file when there is one).
    public func readAll() throws -> [UInt8] {
        guard let path else { return memory }
        guard let bytes = try? readFile(path) else { throw FetchError(.fetchFailed, "temp file vanished") }
        guard bytes.count == count else { throw FetchError(.fetchFailed, "temp file shorter than received") }
        return bytes
    }

    deinit {
        if fd >= 0 { close(fd) }
        if let path { unlink(path) }
    }
}
