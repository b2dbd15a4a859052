import AttacheSupport
#if canImport(Glibc)
import Glibc
#endif

/// A real NATS server with JetStream for process-level tests: `nats-server -js` (Debian's, as
/// `make test-deps` installs it), on 127.0.0.1 with free ports and a temp store directory. Started
/// by `init` (which waits until its monitoring port answers) and stopped by `stop()` or when
/// released.
public final class NATSServer: @unchecked Sendable {  // pid and directory are fixed after init
    public let port: Int
    public let directory: String
    private var pid: pid_t = 0

    public var url: String { "nats://127.0.0.1:\(port)" }

    /// `nats-server` from ATTACHE_NATS_SERVER, else Debian's.
    public static var binary: String {
        getenv("ATTACHE_NATS_SERVER").map { String(cString: $0) } ?? "/usr/sbin/nats-server"
    }

    private static let threads = BlockingPool(threads: 1, name: "nats-server")

    /// Runs `body` with a server of its own, stopped when `body` returns or throws. Starting
    /// waits: on a thread of its own, never on one the tests' work runs on.
    public static func with<T: Sendable>(_ body: (NATSServer) async throws -> T) async throws -> T {
        let server = try await threads.run { _ in try NATSServer() }
        do {
            let result = try await body(server)
            _ = try? await threads.run { _ in server.stop() }
            return result
        } catch {
            _ = try? await threads.run { _ in server.stop() }
            throw error
        }
    }

    public init() throws {
        guard access(Self.binary, X_OK) == 0 else {
            throw OriginError("no nats-server at \(Self.binary): run `make test-deps`")
        }
        directory = try makeTempDirectory()
        let ports = try freePorts(2)
        port = ports[0]
        pid = try spawn([Self.binary, "-js", "-a", "127.0.0.1", "-p", "\(ports[0])", "-m", "\(ports[1])",
                         "-sd", "\(directory)/jetstream"], output: "\(directory)/nats.log")
        let end = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < end {
            if answersHTTP(port: ports[1]) { return }
            usleep(100_000)
        }
        stop()
        throw OriginError("nats-server did not answer within 30 s (see \(directory)/nats.log)")
    }

    /// Stops the server and removes its store.
    public func stop() {
        guard pid > 0 else { return }
        terminate(pid)
        pid = 0
        removeTree(directory)
    }

    deinit {
        stop()
    }
}
