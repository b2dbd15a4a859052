#if canImport(Glibc)
import Glibc
#endif

/// Where one process keeps its temporary files (fetched bodies, files being written into the
/// store): `PARENT/.attache-tmp/<host>-<pid>-<random>/`. On the store's filesystem, so a finished
/// file can be renamed into the store; out of the served namespace (the service serves only
/// `<sha256>.<ext>` names at the top of the store). `removeAll()` at shutdown takes everything
/// with it, whatever references are still alive; leftovers of a process that died (SIGKILL, a
/// power cut) are swept by a later start once they are older than `staleAfter` — only by age,
/// because replicas on other machines may share the directory and their pids mean nothing here.
public struct ScratchSpace: Sendable {
    /// The process's own directory.
    public let path: String
    /// `PARENT/.attache-tmp`, shared by every process using the store.
    public let root: String

    public static let folderName = ".attache-tmp"

    public init(in parent: String, staleAfter: Duration = .seconds(3600)) throws {
        root = "\(parent)/\(Self.folderName)"
        var host = [CChar](repeating: 0, count: 256)
        gethostname(&host, host.count - 1)
        let hostName = String(cBuffer: host)
            .filter { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "." }
        var generator = SystemRandomNumberGenerator()
        path = "\(root)/\(hostName.isEmpty ? "host" : hostName)-\(getpid())-\(String(generator.next() as UInt32, radix: 16))"
        try makeDirectories(root)
        Self.sweep(root, olderThan: staleAfter)
        guard mkdir(path, 0o700) == 0 else {
            throw FileError.now(.cannotMakeDirectory, path)
        }
    }

    /// Removes the process's directory and everything in it (at shutdown or exit).
    public func removeAll() {
        Self.removeTree(path)
    }

    /// Removes the directories (and their files) under `root` not touched for `age`: a live
    /// process's directory changes whenever a body is written, and no body outlives a deadline.
    static func sweep(_ root: String, olderThan age: Duration) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let cutoff = Int(now.tv_sec) - Int(age.components.seconds)
        for name in (try? directoryEntries(root)) ?? [] {
            let entry = "\(root)/\(name)"
            var info = stat()
            guard lstat(entry, &info) == 0, Int(info.st_mtim.tv_sec) < cutoff else { continue }
            if (info.st_mode & S_IFMT) == S_IFDIR {
                removeTree(entry)
            } else {
                unlink(entry)
            }
        }
    }

    /// A directory and everything under it (rm -rf), links removed, never followed.
    public static func removeTree(_ directory: String) {
        for name in (try? directoryEntries(directory)) ?? [] {
            let child = "\(directory)/\(name)"
            var info = stat()
            if lstat(child, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR { removeTree(child) } else { unlink(child) }
        }
        rmdir(directory)
    }

}
