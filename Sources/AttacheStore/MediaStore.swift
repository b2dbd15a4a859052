import AttacheSupport
#if canImport(Glibc)
import Glibc
#endif

/// Where validated media and renditions go.
public protocol MediaStore: Sendable {
    /// Stores bytes under a content-addressed name (`<sha256>.<ext>`) and returns that name, once
    /// the write is durable. Storing the same bytes twice is harmless and returns the same name.
    func put(_ bytes: [UInt8], fileExtension: String) throws -> StoredMedia

    /// The same for bytes whose hash is known (computed as they were downloaded), and that may be
    /// in a file already (a body spilled to the scratch space): the store can take the file as it
    /// is instead of writing the bytes again.
    func put(_ bytes: [UInt8], fileExtension: String, sha256: String, file: String?) throws -> StoredMedia
}

extension MediaStore {
    public func put(_ bytes: [UInt8], fileExtension: String) throws -> StoredMedia {
        try put(bytes, fileExtension: fileExtension, sha256: SHA256.hex(bytes), file: nil)
    }
}

public struct StoredMedia: Sendable, Equatable {
    /// `<sha256>.<ext>`
    public var name: String
    /// A URL a device (or a test) can read it from: `BASE/<name>` or `file://…`.
    public var url: String
}

public struct StoreError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// A directory of content-addressed files. Each file is written to a temp name and renamed, so
/// a reader never sees a partial file.
public struct FileStore: MediaStore {
    public let directory: String
    /// `https://cdn.example.com/media` → URLs `https://cdn.example.com/media/<name>`; nil → `file://`.
    public let publicBaseURL: String?
    /// Where files are written before they are renamed in (a process's `ScratchSpace` on the same
    /// filesystem, so nothing half-written is ever left among the stored names); nil: beside them.
    public let tempDirectory: String?

    public init(directory: String, publicBaseURL: String? = nil, tempDirectory: String? = nil) throws {
        self.directory = directory.hasSuffix("/") && directory.count > 1 ? String(directory.dropLast()) : directory
        self.publicBaseURL = publicBaseURL.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
        self.tempDirectory = tempDirectory
        try Self.makeDirectories(self.directory)
    }

    /// The absolute path of the directory (for file:// URLs).
    public var absoluteDirectory: String {
        if directory.hasPrefix("/") { return directory }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX))
        guard getcwd(&buffer, buffer.count) != nil else { return directory }
        let cwd = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return cwd + "/" + (directory.hasPrefix("./") ? String(directory.dropFirst(2)) : directory)
    }

    public func url(for name: String) -> String {
        if let publicBaseURL { return "\(publicBaseURL)/\(name)" }
        return "file://\(absoluteDirectory)/\(name)"
    }

    /// A file already on the same filesystem is linked in (no copy); else the bytes are written
    /// to a temp file and renamed. Either way the file and the directory are fsynced first: no URL
    /// leaves the process for a file a power cut could take back.
    public func put(_ bytes: [UInt8], fileExtension: String, sha256: String, file: String?) throws -> StoredMedia {
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
                throw StoreError("\(error)")
            }
        }
        return StoredMedia(name: name, url: url(for: name))
    }

    public static func makeDirectories(_ path: String) throws {
        do { try AttacheSupport.makeDirectories(path) } catch { throw StoreError("\(error)") }
    }
}
