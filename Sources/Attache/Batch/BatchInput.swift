import AttacheSupport
#if canImport(Glibc)
import Glibc
#endif

/// One payload of a batch: its 1-based position in the input, where it came from, its bytes.
public struct BatchItem: Sendable {
    public var line: Int
    public var name: String
    public var bytes: [UInt8]
    /// Why the item could not be read (then `bytes` is empty): it is reported and skipped.
    public var unreadable: String? = nil
}

public enum BatchInput: Sendable {
    /// JSON Lines, one payload per line; "-" reads standard input.
    case jsonLines(String)
    /// A directory of `.json` / `.apns` files, taken in name order.
    case directory(String)

    /// Directories become `.directory`, anything else JSON Lines.
    public static func at(_ path: String) -> BatchInput {
        var info = stat()
        if path != "-", stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR { return .directory(path) }
        return .jsonLines(path)
    }

    public func items() throws -> [BatchItem] {
        switch self {
        case .jsonLines(let path):
            let bytes = path == "-" ? try readAll(fd: STDIN_FILENO, name: "standard input") : try readFile(path)
            var items: [BatchItem] = []
            var line = 0
            for raw in bytes.split(separator: 0x0A, omittingEmptySubsequences: false) {
                line += 1
                var text = Array(raw)
                if text.last == 0x0D { text.removeLast() }
                if text.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }  // blank lines are not payloads
                items.append(BatchItem(line: line, name: "\(path == "-" ? "stdin" : path):\(line)", bytes: text))
            }
            return items
        case .directory(let path):
            let names = try Self.list(path).filter { $0.hasSuffix(".json") || $0.hasSuffix(".apns") }.sorted()
            // An entry that is not a regular file (a directory named `x.json`, a link to one, a
            // FIFO) is reported and skipped; it does not stop the batch.
            return names.enumerated().map { i, name in
                do {
                    return BatchItem(line: i + 1, name: name, bytes: try readRegularFile("\(path)/\(name)", followingLinks: true))
                } catch {
                    return BatchItem(line: i + 1, name: name, bytes: [], unreadable: "\(error)")
                }
            }
        }
    }

    static func list(_ path: String) throws -> [String] {
        try directoryEntries(path).filter { !$0.hasPrefix(".") }
    }
}
