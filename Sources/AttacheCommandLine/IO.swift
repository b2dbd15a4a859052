// What the two executables share: reading and writing what the user named, the environment,
// logging, and the parsing of durations and addresses.
import AttacheSupport
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// Reads a whole file, or standard input for "-".
public func readInput(_ path: String) throws -> [UInt8] {
    path == "-" ? try readAll(fd: STDIN_FILENO, name: "standard input") : try readFile(path)
}

public func writeStdout(_ bytes: [UInt8]) { _ = bytes.withUnsafeBytes { writeAll(fd: STDOUT_FILENO, $0) } }
public func writeStderr(_ bytes: [UInt8]) { _ = bytes.withUnsafeBytes { writeAll(fd: STDERR_FILENO, $0) } }
public func printError(_ line: String) { writeStderr(Array((line + "\n").utf8)) }

/// Writes a file the user named (which may be /dev/stdout or a pipe, so not via a rename).
public func writeFile(_ path: String, _ bytes: [UInt8]) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    guard fd >= 0 else { throw FileError.now(.cannotWrite, path) }
    let written = bytes.withUnsafeBytes { writeAll(fd: fd, $0) }
    guard close(fd) == 0, written else { throw FileError.now(.cannotWrite, path) }
}

/// An environment variable, nil when unset or empty.
public func environment(_ name: String) -> String? {
    getenv(name).map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 }
}

/// Logs on stderr (stdout carries payloads): text at `level`, or JSON lines for log shippers.
public func bootstrapLogging(level: Logger.Level, json: Bool = false, metadataProvider: Logger.MetadataProvider? = nil) {
    LoggingSystem.bootstrap { label -> any LogHandler in
        var handler = LogLineHandler(label: label, format: json ? .json : .text, metadataProvider: metadataProvider)
        handler.logLevel = level
        return handler
    }
}
