import ArgumentParser
import AttacheCommandLine
import NIOCore
#if canImport(Glibc)
import Glibc
#endif

/// What stops a long-running command, said as every attache command says it — one line,
/// `attache serve: <what>` — with exit status 1. A usage error keeps ArgumentParser's usage text.
func reportingFailure(_ command: String, _ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let error as ValidationError {
        throw error
    } catch let error as ExitCode {
        throw error
    } catch {
        printError("attache \(command): \(error)")
        throw ExitCode(1)
    }
}

/// Runs `body` (a service group), turning a socket that cannot be bound into an error that names
/// the addresses asked for: NIO's says `bind(descriptor:ptr:bytes:)` and the errno only.
func listening(on addresses: [String], _ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let error as IOError where [EADDRINUSE, EADDRNOTAVAIL, EACCES].contains(error.errnoCode) {
        throw ListenError(addresses: addresses, errno: error.errnoCode)
    }
}

struct ListenError: Error, CustomStringConvertible {
    let addresses: [String]
    let errno: Int32
    var description: String {
        "cannot listen on \(addresses.joined(separator: " or ")): \(String(cString: strerror(errno)))"
            + (errno == EADDRINUSE ? " (another process is listening there: stop it or give another --port)" : "")
    }
}
