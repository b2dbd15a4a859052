import Attache
import AttacheEnrichment
import AttacheSupport
#if canImport(Glibc)
import Glibc
#endif

/// A file of whole lines, appended one `write` per line so an interruption never leaves half a
/// line; on resume, a torn tail (from a crash mid-write) is cut off and the lines are counted.
final class LineFile {
    let path: String
    private let fd: Int32

    /// Opens for appending; `keep` says how many complete lines to keep (the rest is cut off),
    /// nil keeps every complete line. Returns the kept lines as well.
    init(path: String, resume: Bool, keep: ((_ lines: [[UInt8]]) -> Int)? = nil) throws {
        self.path = path
        var kept: [[UInt8]] = []
        if resume, let existing = try? readFile(path) {
            var lines = existing.split(separator: 0x0A, omittingEmptySubsequences: false).map(Array.init)
            lines.removeLast()  // after the last newline: empty, or a torn line
            kept = lines
        }
        let count = keep?(kept) ?? kept.count
        kept = Array(kept.prefix(count))
        let flags = O_WRONLY | O_CREAT | O_TRUNC
        fd = open(path, flags, 0o644)
        self.lines = kept
        guard fd >= 0 else { throw BatchError(.cannotWrite, path: path, "cannot write \(path)") }
        try append(contentsOf: kept)
    }

    /// The complete lines the file had when it was opened (and kept).
    private(set) var lines: [[UInt8]]

    func append(_ line: [UInt8]) throws {
        try append(contentsOf: [line])
    }

    /// Several lines in one `write`.
    func append(contentsOf lines: [[UInt8]]) throws {
        guard !lines.isEmpty else { return }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(lines.reduce(0) { $0 + $1.count + 1 })
        for line in lines { bytes += line; bytes.append(0x0A) }
        guard bytes.withUnsafeBytes({ writeAll(fd: fd, $0) }) else { throw BatchError(.cannotWrite, path: path, "cannot write \(path)") }
    }

    /// What was written is on disk.
    func sync() throws {
        guard fsync(fd) == 0 else { throw BatchError(.cannotWrite, path: path, "cannot sync \(path)") }
    }

    deinit {
        close(fd)
    }
}

/// Why a batch cannot start or go on: a code a caller can act on (`sameFile` and
/// `foreignLedger` are the command line's to fix; `cannotWrite` is the disk's), the file it is
/// about, and the words.
public struct BatchError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// Two of the input, output, report and rejects name the same file.
        case sameFile = "same-file"
        /// `--resume` was given the ledger of another input.
        case foreignLedger = "foreign-ledger"
        /// An output, report or rejects file could not be opened, written or synced.
        case cannotWrite = "cannot-write"
    }

    public let code: Code
    public let path: String
    public let description: String

    init(_ code: Code, path: String, _ description: String) {
        self.code = code
        self.path = path
        self.description = description
    }
}
