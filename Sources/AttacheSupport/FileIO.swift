#if canImport(Glibc)
import Glibc
#endif

/// A file could not be read or written: what was being done, to which file, and why the system
/// said it failed.
public struct FileError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable {
        case cannotOpen = "cannot-open"
        case cannotRead = "cannot-read"
        case cannotWrite = "cannot-write"
        /// No temp file could be made in the directory.
        case cannotCreate = "cannot-create"
        case cannotMakeDirectory = "cannot-make-directory"
        case cannotLink = "cannot-link"
        case cannotSync = "cannot-sync"
        /// A directory, a FIFO, a device: never read as a file.
        case notRegular = "not-regular"
        /// The file became shorter while it was being read.
        case shortened
    }

    public let code: Code
    /// The file (with `cannotCreate`, the directory).
    public let path: String
    /// errno, when the system said why.
    public let systemError: Int32?

    public init(_ code: Code, path: String, systemError: Int32? = nil) {
        self.code = code
        self.path = path
        self.systemError = systemError
    }

    /// The same, with the errno of the call that just failed.
    public static func now(_ code: Code, _ path: String) -> FileError {
        FileError(code, path: path, systemError: errno)
    }

    public var description: String {
        let why = systemError.map { ": \(String(cString: strerror($0)))" } ?? ""
        switch code {
        case .cannotOpen: return "cannot open \(path)\(why)"
        case .cannotRead: return "cannot read \(path)\(why)"
        case .cannotWrite: return "cannot write \(path)\(why)"
        case .cannotCreate: return "cannot create a file in \(path)\(why)"
        case .cannotMakeDirectory: return "cannot create directory \(path)\(why)"
        case .cannotLink: return "cannot link \(path)\(why)"
        case .cannotSync: return "cannot sync \(path)\(why)"
        case .notRegular: return "\(path) is not a regular file"
        case .shortened: return "\(path) is shorter than it was"
        }
    }
}

/// Reads everything from an open descriptor: a regular file in one allocation of its size,
/// anything else (a pipe, a terminal, a /proc file, whose size reads as 0) in chunks until end of
/// file.
public func readAll(fd: Int32, name: String) throws -> [UInt8] {
    func failure() -> FileError { .now(.cannotRead, name) }
    var info = stat()
    if fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_size > 0 {
        let size = Int(info.st_size)
        return try [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            while count < size {
                let n = read(fd, buffer.baseAddress! + count, size - count)
                if n < 0 && errno == EINTR { continue }
                guard n >= 0 else { throw failure() }
                if n == 0 { break }
                count += n
            }
        }
    }
    var out: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
        if n < 0 && errno == EINTR { continue }
        guard n >= 0 else { throw failure() }
        if n == 0 { return out }
        out.append(contentsOf: chunk[..<n])
    }
}

/// A whole file's bytes.
public func readFile(_ path: String) throws -> [UInt8] {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { throw FileError.now(.cannotOpen, path) }
    defer { close(fd) }
    return try readAll(fd: fd, name: path)
}

/// A regular file's bytes; with `followingLinks` false the name itself must not be a symbolic
/// link (what a server hands out of a directory: a link planted there must not serve
/// `/etc/passwd`). Never blocks on a FIFO, never reads a directory.
public func readRegularFile(_ path: String, followingLinks: Bool = false) throws -> [UInt8] {
    let file = try RegularFile(path, followingLinks: followingLinks)
    return try readAll(fd: file.fd, name: path)
}

/// An open regular file, closed when the last reference goes (a response body that is never
/// sent must not leak its descriptor). Opened as `readRegularFile` opens it.
public final class RegularFile: Sendable {
    public let fd: Int32
    public let size: Int
    public let path: String

    public init(_ path: String, followingLinks: Bool = false) throws {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | (followingLinks ? 0 : O_NOFOLLOW))
        guard fd >= 0 else { throw FileError.now(.cannotOpen, path) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            throw FileError(.notRegular, path: path)
        }
        self.fd = fd
        self.size = Int(info.st_size)
        self.path = path
    }

    /// Fills `buffer` from `offset` (fewer bytes only at the end of the file); blocks, so it runs
    /// on a thread pool.
    public func read(at offset: Int, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        var count = 0
        while count < buffer.count {
            let n = pread(fd, buffer.baseAddress! + count, buffer.count - count, off_t(offset + count))
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw FileError.now(.cannotRead, path) }
            if n == 0 { break }
            count += n
        }
        return count
    }

    deinit {
        close(fd)
    }
}

/// Writes all of `buffer`, retrying short writes and EINTR; false when the descriptor fails.
public func writeAll(fd: Int32, _ buffer: UnsafeRawBufferPointer) -> Bool {
    var offset = 0
    while offset < buffer.count {
        let n = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { return false }
        offset += n
    }
    return true
}

/// A new file `DIRECTORY/PREFIX-XXXXXX`, open for reading and writing, mode 0600; nil (errno
/// set) when it cannot be made. A directory that vanished (swept as stale by another process) is
/// made again once.
public func makeTempFile(in directory: String, prefix: String) -> (fd: Int32, path: String)? {
    for attempt in 0..<2 {
        var template = Array("\(directory)/\(prefix)-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        if fd >= 0 {
            return (fd, String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        guard attempt == 0, errno == ENOENT else { return nil }
        _ = mkdir(directory, 0o700)
    }
    return nil
}

/// A whole file written under a temp name and renamed into place, so a reader (or a resumed
/// batch) never sees part of it. Mode 0644. The temp file is made in `tempDirectory` (which must
/// be on the same filesystem), else beside the file. `durable`: the file and then its directory
/// are fsynced before this returns, so after a power cut the name is there with all its bytes.
public func writeFileAtomically(_ path: String, _ bytes: [UInt8], tempDirectory: String? = nil, durable: Bool = false) throws {
    let directory = tempDirectory ?? parentDirectory(path)
    guard let (fd, temp) = makeTempFile(in: directory, prefix: ".tmp") else {
        throw FileError.now(.cannotCreate, directory)
    }
    var ok = bytes.withUnsafeBytes { writeAll(fd: fd, $0) } && fchmod(fd, 0o644) == 0
    if ok && durable { ok = fsync(fd) == 0 }
    let error = errno
    ok = close(fd) == 0 && ok
    guard ok, rename(temp, path) == 0 else {
        let failure = ok ? errno : error
        unlink(temp)
        throw FileError(.cannotWrite, path: path, systemError: failure)
    }
    if durable { try syncDirectory(parentDirectory(path)) }
}

/// Gives an existing file (a downloaded body in the scratch space) a second name, durably: its
/// data is fsynced, the new name made with link(2) — no byte copied, and an existing name is left
/// as it is (same content, by construction) — and the directory fsynced.
public func linkFileDurably(_ source: String, to path: String) throws {
    try syncFile(source)
    guard link(source, path) == 0 || errno == EEXIST else {
        throw FileError.now(.cannotLink, path)
    }
    chmod(path, 0o644)
    try syncDirectory(parentDirectory(path))
}

/// fsync on a file written earlier: its data survives a power cut (its name needs its directory
/// synced too).
public func syncFile(_ path: String) throws {
    try fsyncPath(path, O_RDONLY | O_CLOEXEC)
}

/// fsync on a directory: its entries (a rename, a link) survive a power cut.
public func syncDirectory(_ path: String) throws {
    try fsyncPath(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
}

private func fsyncPath(_ path: String, _ flags: Int32) throws {
    let fd = open(path, flags)
    guard fd >= 0 else { throw FileError.now(.cannotOpen, path) }
    defer { close(fd) }
    guard fsync(fd) == 0 else { throw FileError.now(.cannotSync, path) }
}

private func parentDirectory(_ path: String) -> String {
    path.lastIndex(of: "/").map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
}

/// Whether a file can be made in the directory now (one is made and removed; a missing directory
/// is not made).
public func isWritableDirectory(_ path: String) -> Bool {
    var template = Array("\(path)/.ready-XXXXXX".utf8CString)
    let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
    guard fd >= 0 else { return false }
    close(fd)
    template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
    return true
}

/// Bytes an unprivileged writer may still use on the directory's filesystem.
public func freeBytes(on directory: String) -> Int {
    var info = statvfs()
    guard statvfs(directory, &info) == 0 else { return 0 }
    return Int(info.f_bavail) * Int(info.f_frsize)
}

/// Makes a directory and every missing one above it (mode 0755), as `mkdir -p`.
public func makeDirectories(_ path: String) throws {
    var current = path.hasPrefix("/") ? "" : "."
    for part in path.split(separator: "/") {
        current += "/" + part
        if mkdir(current, 0o755) != 0 && errno != EEXIST {
            throw FileError.now(.cannotMakeDirectory, current)
        }
    }
}

/// The names in a directory, without `.` and `..`, in no particular order.
public func directoryEntries(_ path: String) throws -> [String] {
    guard let dir = opendir(path) else { throw FileError.now(.cannotOpen, path) }
    defer { closedir(dir) }
    var names: [String] = []
    while let entry = readdir(dir) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        if name != "." && name != ".." { names.append(name) }
    }
    return names
}

/// The bytes of a file the user named on the command line ("-": standard input), or of a
/// download that spilled to the scratch space. A regular file is mapped, not read: a decoder that
/// needs the first frame of a 3 MB GIF then touches only the pages it reads, and nothing is
/// copied or zero-filled first (2 ms of a 17 ms thumbnail). The caveat of any mapping: if another
/// process shrinks the file meanwhile, reading past its new end faults (SIGBUS), so this is for
/// files that nothing else writes: the command line's, and this process's own scratch files.
public final class InputFile: @unchecked Sendable {  // immutable after init
    private let mapping: UnsafeMutableRawPointer?
    public let count: Int
    private let copy: [UInt8]
    /// The file's name, when it was opened by name (a decoder helper is handed it by descriptor).
    public let path: String?

    public init(_ path: String) throws {
        self.path = path == "-" ? nil : path
        if path == "-" {
            copy = try readAll(fd: STDIN_FILENO, name: "standard input")
            mapping = nil
            count = copy.count
            return
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw FileError.now(.cannotOpen, path) }
        defer { close(fd) }
        (mapping, count, copy) = try Self.map(fd, name: path)
    }

    /// Maps a file this process was handed open (the descriptor stays the caller's to close).
    public init(descriptor fd: Int32, name: String) throws {
        path = nil
        (mapping, count, copy) = try Self.map(fd, name: name)
    }

    private static func map(_ fd: Int32, name: String) throws -> (UnsafeMutableRawPointer?, Int, [UInt8]) {
        var info = stat()
        if fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_size > 0,
           let mapped = mmap(nil, Int(info.st_size), PROT_READ, MAP_PRIVATE, fd, 0), mapped != MAP_FAILED {
            return (mapped, Int(info.st_size), [])
        }
        let copy = try readAll(fd: fd, name: name)
        return (nil, copy.count, copy)
    }

    /// The bytes are a read-only private mapping of the file (not a copy in memory): pages a
    /// reader is done with may be given back, and come back from the file if read again.
    public var isMapped: Bool { mapping != nil }

    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        if let mapping { return try body(UnsafeRawBufferPointer(start: mapping, count: count)) }
        return try copy.withUnsafeBytes(body)
    }

    deinit {
        if let mapping { munmap(mapping, count) }
    }
}

/// Bytes to parse where they are: an array in memory, or a file mapped read-only (`InputFile`).
public enum MappedBytes: Sendable {
    case memory([UInt8])
    case file(InputFile)

    public var count: Int {
        switch self {
        case .memory(let bytes): bytes.count
        case .file(let file): file.count
        }
    }

    /// See `InputFile.isMapped`.
    public var isMapped: Bool {
        if case .file(let file) = self { return file.isMapped }
        return false
    }

    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        switch self {
        case .memory(let bytes): try bytes.withUnsafeBytes(body)
        case .file(let file): try file.withUnsafeBytes(body)
        }
    }

    /// The bytes as an array (a copy, for a file).
    public var array: [UInt8] {
        switch self {
        case .memory(let bytes): bytes
        case .file(let file): file.withUnsafeBytes { Array($0) }
        }
    }
}
