import AttacheSupport
#if canImport(Glibc)
import Glibc
#endif

/// A real NATS server with JetStream for process-level tests: `nats-server -js` (Debian's, as
/// `make test-deps` installs it), on 127.0.0.1 with free ports and a temp store directory. Started
/// by `init` (which waits until its monitoring port answers) and stopped by `stop()` or when
/// released.
public final class NATSServer: Sendable {
    public let port: Int
    private let process: ServerProcess
    public var directory: String { process.directory }

    public var url: String { "nats://127.0.0.1:\(port)" }

    /// `nats-server` from ATTACHE_NATS_SERVER, else Debian's.
    public static var binary: String {
        getenv("ATTACHE_NATS_SERVER").map { String(cString: $0) } ?? "/usr/sbin/nats-server"
    }

    private static let threads = BlockingPool(threads: 1, name: "nats-server")

    /// Runs `body` with a server of its own, stopped when `body` returns or throws.
    public static func with<T: Sendable>(_ body: (NATSServer) async throws -> T) async throws -> T {
        try await withServer(on: threads, start: { try NATSServer() }, stop: { $0.stop() }, body)
    }

    public init() throws {
        guard access(Self.binary, X_OK) == 0 else {
            throw SetupError("no nats-server at \(Self.binary): run `make test-deps`")
        }
        let directory = try makeTempDirectory()
        process = try ServerProcess(ports: 2, directory: directory, log: "nats.log", within: .seconds(30), name: "nats-server",
                                    arguments: { [Self.binary, "-js", "-a", "127.0.0.1", "-p", "\($0[0])", "-m", "\($0[1])",
                                                  "-sd", "\(directory)/jetstream"] },
                                    readyPort: { $0[1] }, logSays: "Server is ready")
        port = process.ports[0]
    }

    /// Stops the server and removes its store.
    public func stop() {
        process.stop()
    }
}
