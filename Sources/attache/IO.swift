#if canImport(Glibc)
import Glibc
#endif

struct IOError: Error, CustomStringConvertible {
    let description: String
}

/// Reads a whole file, or standard input for "-".
func readInput(_ path: String) throws -> [UInt8] {
    let fd = path == "-" ? STDIN_FILENO : open(path, O_RDONLY)
    guard fd >= 0 else { throw IOError(description: "cannot open \(path): \(String(cString: strerror(errno)))") }
    defer { if fd != STDIN_FILENO { close(fd) } }
    var info = stat()
    if fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG {
        // A regular file: one allocation of its size, no regrowth while reading.
        let size = Int(info.st_size)
        let bytes = try [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            while count < size {
                let n = read(fd, buffer.baseAddress! + count, size - count)
                if n < 0 && errno == EINTR { continue }
                guard n >= 0 else { throw IOError(description: "cannot read \(path): \(String(cString: strerror(errno)))") }
                if n == 0 { break }
                count += n
            }
        }
        return bytes
    }
    var out: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
        if n < 0 && errno == EINTR { continue }
        guard n >= 0 else { throw IOError(description: "cannot read \(path): \(String(cString: strerror(errno)))") }
        if n == 0 { return out }
        out.append(contentsOf: chunk[..<n])
    }
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
