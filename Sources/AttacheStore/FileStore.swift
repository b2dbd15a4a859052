import AttacheSupport
#if canImport(Glibc)
import Glibc
#endif

/// A directory of content-addressed files. Each file is written to a temp name and renamed, so
/// a reader never sees a partial file.
public struct FileStore: MediaStore {
    public let directory: String
    /// `https://cdn.example.com/media` → URLs `https://cdn.example.com/media/<name>`; nil → `file://`.
    public let publicBaseURL: String?
    /// Where files are written before they are renamed in (a process's `ScratchSpace` on the same
    /// filesystem, so nothing half-written is ever left among the stored names); nil: beside them.
    public let tempDirectory: String?
    /// Writes and fsyncs block: they run here, not on the caller's thread.
    let pool: BlockingPool
    /// What every URL starts with: `publicBaseURL/`, else `file://` and the absolute directory.
    /// Read once: the cache's key names it for every attachment.
    public let urlBase: String

    public init(directory: String, publicBaseURL: String? = nil, tempDirectory: String? = nil,
                pool: BlockingPool = .shared) throws {
        self.directory = directory.withoutTrailingSlash
        self.publicBaseURL = publicBaseURL?.withoutTrailingSlash
        self.tempDirectory = tempDirectory
        self.pool = pool
        try Self.makeDirectories(self.directory)
        urlBase = self.publicBaseURL.map { "\($0)/" } ?? "file://\(Self.absolute(self.directory))/"
    }

    /// The absolute path of the directory (for file:// URLs).
    public var absoluteDirectory: String { Self.absolute(directory) }

    private static func absolute(_ directory: String) -> String {
        if directory.hasPrefix("/") { return directory }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX))
        guard getcwd(&buffer, buffer.count) != nil else { return directory }
        let cwd = String(cBuffer: buffer)
        return cwd + "/" + (directory.hasPrefix("./") ? String(directory.dropFirst(2)) : directory)
    }

    public func url(for name: String) -> String {
        urlBase + name
    }

    /// A file already on the same filesystem is linked in (no copy); else the bytes are written
    /// to a temp file and renamed. Either way the file and the directory are fsynced first: no URL
    /// leaves the process for a file a power cut could take back.
    public func put(_ bytes: [UInt8], fileExtension: String, sha256: String, file: String?,
                    deadline: ContinuousClock.Instant) async throws -> StoredMedia {
        // A write cannot be interrupted; past the deadline it ends on its own and its URL is
        // never handed out (a file that lands after all is harmless: its name is its content).
        do {
            return try await pool.run(until: deadline) { _ in try putNow(bytes, fileExtension: fileExtension, sha256: sha256, file: file) }
        } catch is DeadlinePassed {
            throw StoreError(.deadlinePassed, "the deadline passed before the write was durable")
        }
    }

    /// The same, on the calling thread.
    func putNow(_ bytes: [UInt8], fileExtension: String, sha256: String, file: String?) throws -> StoredMedia {
        let name = "\(sha256).\(fileExtension)"
        let path = "\(directory)/\(name)"
        if access(path, F_OK) != 0 {
            do {
                if let file, (try? linkFileDurably(file, to: path)) != nil {
                    // linked
                } else {
                    try writeFileAtomically(path, bytes, tempDirectory: tempDirectory, durable: true)
                }
            } catch {
                throw StoreError(.fileSystem, "\(error)", key: name)
            }
        }
        return StoredMedia(name: name, url: url(for: name))
    }

    public func record(named name: String, deadline: ContinuousClock.Instant) async -> [UInt8]? {
        let path = "\(directory)/results/\(name)"
        return try? await pool.run(until: deadline) { _ in try readFile(path) }
    }

    public func putRecord(_ bytes: [UInt8], named name: String, deadline: ContinuousClock.Instant) async throws {
        let directory = "\(self.directory)/results", temp = tempDirectory
        do {
            try await pool.run(until: deadline) { _ in
                try AttacheSupport.makeDirectories(directory)
                try writeFileAtomically("\(directory)/\(name)", bytes, tempDirectory: temp, durable: true)
            }
        } catch is DeadlinePassed {
            throw StoreError(.deadlinePassed, "the deadline passed before the record was durable", key: name)
        } catch let error as StoreError {
            throw error
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw StoreError(.fileSystem, "\(error)", key: name)
        }
    }

    /// Writable is all a directory can say of itself; how much room is enough is the caller's
    /// call (the service's `/readyz` asks for the largest attachment).
    public func unavailability() async -> String? {
        isWritableDirectory(directory) ? nil : "media directory not writable"
    }

    public static func makeDirectories(_ path: String) throws {
        do { try AttacheSupport.makeDirectories(path) } catch { throw StoreError(.misconfigured, "\(error)") }
    }
}
