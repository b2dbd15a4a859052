import AttacheSupport
#if canImport(Glibc)
import Glibc
#endif

struct IOError: Error, CustomStringConvertible {
    let description: String
}

/// Reads a whole file, or standard input for "-".
func readInput(_ path: String) throws -> [UInt8] {
    path == "-" ? try readAll(fd: STDIN_FILENO, name: "standard input") : try readFile(path)
}

private func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
    var offset = 0
    while offset < bytes.count {
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
        if n < 0 && errno == EINTR { continue }
        guard n > 0 else { return false }
        offset += n
    }
    return true
}

func writeStdout(_ bytes: [UInt8]) { _ = writeAll(STDOUT_FILENO, bytes) }
func writeStderr(_ bytes: [UInt8]) { _ = writeAll(STDERR_FILENO, bytes) }
func printError(_ line: String) { writeStderr(Array((line + "\n").utf8)) }

func writeFile(_ path: String, _ bytes: [UInt8]) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    guard fd >= 0, writeAll(fd, bytes), close(fd) == 0 else {
        throw IOError(description: "cannot write \(path)")
    }
}
