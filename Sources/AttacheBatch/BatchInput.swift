import Attache
import AttacheEnrichment
import AttachePayload
import AttacheStore
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
        try read().items
    }

    /// The items, and what identifies this input (see `BatchInputIdentity`).
    public func read() throws -> (items: [BatchItem], identity: BatchInputIdentity) {
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
            return (items, try BatchInputIdentity(path: path, size: bytes.count, head: Array(bytes.prefix(BatchInputIdentity.headBytes))))
        case .directory(let path):
            let names = try Self.list(path).filter { $0.hasSuffix(".json") || $0.hasSuffix(".apns") }.sorted()
            // An entry that is not a regular file (a directory named `x.json`, a link to one, a
            // FIFO) is reported and skipped; it does not stop the batch.
            let items = names.enumerated().map { i, name in
                do {
                    return BatchItem(line: i + 1, name: name, bytes: try readRegularFile("\(path)/\(name)", followingLinks: true))
                } catch {
                    return BatchItem(line: i + 1, name: name, bytes: [], unreadable: "\(error)")
                }
            }
            // A directory is identified by its payload files' names (their order is the batch's
            // order): its size is how many there are, its head the start of their list.
            let list = Array(names.joined(separator: "\n").utf8)
            return (items, try BatchInputIdentity(path: path, size: names.count, head: Array(list.prefix(BatchInputIdentity.headBytes))))
        }
    }

    static func list(_ path: String) throws -> [String] {
        try directoryEntries(path).filter { !$0.hasPrefix(".") }
    }
}

/// What a batch ran on — the input's path, size (bytes; entries for a directory) and a hash of
/// its first 64 KiB — written into the first ledger entry so that `--resume` against another
/// input (or another shard) is refused instead of skipping payloads it never saw.
public struct BatchInputIdentity: Sendable, Equatable {
    static let headBytes = 64 << 10
    public var path: String
    public var size: Int
    public var headSHA256: String
    public var shard: String?

    init(path: String, size: Int, head: [UInt8]) throws {
        self.path = path
        self.size = size
        self.headSHA256 = try SHA256Hasher.hex(head)
    }

    var json: JSONValue {
        var o = JSONObject()
        o["path"] = .string(path)
        o["size"] = .int(size)
        o["head_sha256"] = .string(headSHA256)
        o["shard"] = shard.map(JSONValue.string) ?? .null
        return .object(o)
    }

    init?(json: JSONValue?) {
        guard let o = json?.objectValue, let path = o["path"]?.stringValue, let size = o["size"]?.numberText.flatMap({ Int($0) }),
              let head = o["head_sha256"]?.stringValue else { return nil }
        self.path = path
        self.size = size
        self.headSHA256 = head
        self.shard = o["shard"]?.stringValue
    }

    /// Why a ledger written for `recorded` cannot be resumed against this input, if it cannot.
    func mismatch(with recorded: BatchInputIdentity) -> String? {
        var differences: [String] = []
        if path != recorded.path { differences.append("path \(recorded.path), now \(path)") }
        if size != recorded.size { differences.append("size \(recorded.size), now \(size)") }
        if headSHA256 != recorded.headSHA256 { differences.append("its first 64 KiB differ") }
        if shard != recorded.shard { differences.append("shard \(recorded.shard ?? "none"), now \(shard ?? "none")") }
        return differences.isEmpty ? nil : differences.joined(separator: "; ")
    }
}
