import AttacheSupport
#if canImport(Glibc)
import Glibc
#endif

extension BatchRunner.Configuration {
    /// Refuses a batch whose input, output, report and rejects are not four different files, before
    /// anything is read or opened for writing: `--report in.jsonl` would truncate the payloads it
    /// is about to read, and `--report out.jsonl --output out.jsonl` would interleave two files'
    /// lines into one. Files that exist are compared by device and inode (links, hard or symbolic,
    /// name the same file); a file not there yet by its absolute path, its directory resolved.
    public func checkDistinctFiles() throws {
        var named: [(role: String, path: String)] = []
        if case .jsonLines(let path) = input, path != "-" { named.append(("input", path)) }
        if case .directory(let path) = input, outputIsDirectory {
            // One file per input, under the input's own name: written into the input directory,
            // each output would replace its payload.
            named.append(("input directory", path))
        }
        named.append((outputIsDirectory ? "output directory" : "output", output))
        named.append(("report", report))
        named.append(("rejects", rejects))
        let identities = named.map { FileIdentity(path: $0.path) }
        for i in named.indices {
            for j in named.indices where j > i && identities[i] == identities[j] {
                throw BatchError(.sameFile, path: named[j].path, "\(named[i].role) \(named[i].path) and \(named[j].role) \(named[j].path) are the same file; "
                    + "give each of the input, --output, --report and --rejects a file of its own")
            }
        }
    }
}

/// What a path names: the file's device and inode when it exists (links followed), otherwise
/// the absolute path it would be created at.
enum FileIdentity: Equatable {
    case file(device: UInt64, inode: UInt64)
    case absent(String)

    init(path: String) {
        var info = stat()
        if stat(path, &info) == 0 {
            self = .file(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
            return
        }
        self = .absent(Self.absolute(path))
    }

    /// `path` made absolute with its directory's links resolved (the file itself does not exist);
    /// `.` and `..` in a directory that does not exist either are left as written.
    private static func absolute(_ path: String) -> String {
        let trimmed = path.withoutTrailingSlash
        let slash = trimmed.lastIndex(of: "/")
        let directory = slash.map { $0 == trimmed.startIndex ? "/" : String(trimmed[..<$0]) } ?? "."
        let name = slash.map { String(trimmed[trimmed.index(after: $0)...]) } ?? trimmed
        guard let resolved = realpath(directory, nil) else { return trimmed }
        defer { free(resolved) }
        let base = String(cString: resolved)
        return base == "/" ? "/\(name)" : "\(base)/\(name)"
    }
}
