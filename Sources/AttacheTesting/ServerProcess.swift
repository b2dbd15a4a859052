import AttacheSupport
import CSpawn
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A real server a process-level test starts (SeaweedFS, NATS): a child process with a temp
/// directory of its own, ready once its HTTP port answers, stopped by `stop()` or when released
/// (its directory removed either way).
final class ServerProcess: Sendable {
    let directory: String
    /// The free ports it was started on (`ports` of them, chosen here).
    let ports: [Int]
    /// 0 once stopped: whoever takes the pid first stops the process.
    private let pid: Atomic<pid_t>

    /// Starts the program `arguments(ports)` names, on `ports` free loopback ports, with its output
    /// in DIRECTORY/`log`, and waits up to `within` for `readyPort(ports)` to answer HTTP; stops it
    /// and throws if it does not. A port is free when chosen, not when the server binds it: another
    /// test's socket can take it in between, and the server exits (SeaweedFS: "bind: address
    /// already in use", seen failing CI after a 60 s wait). A server that exits before it answers
    /// is started again on new ports, up to three times. `logSays`: the server is ready only once
    /// its log says so too (NATS answers its monitoring port before it has bound its client port,
    /// and exits when that port was taken: the answer alone would hand a test a server gone).
    init(ports count: Int, directory: String, log: String, within: Duration, name: String,
         arguments: ([Int]) -> [String], readyPort: ([Int]) -> Int, logSays: String? = nil) throws {
        self.directory = directory
        for attempt in 1...3 {
            let ports = try freePorts(count)
            let pid = try spawn(arguments(ports), output: "\(directory)/\(log)")
            let end = ContinuousClock.now + within
            var exited = false
            while ContinuousClock.now < end && !exited {
                let answers = answersHTTP(port: readyPort(ports)) && (logSays.map { logContains("\(directory)/\(log)", $0) } ?? true)
                var status: Int32 = 0
                exited = waitpid(pid, &status, WNOHANG) == pid
                if answers && !exited {
                    self.ports = ports
                    self.pid = Atomic(pid)
                    return
                }
                if !exited { usleep(100_000) }
            }
            if exited && attempt < 3 { continue }
            if !exited { terminate(pid) }
            // Its last words go into the error: the directory the log is in is removed.
            let said = logTail("\(directory)/\(log)")
            removeTree(directory)
            throw SetupError("\(name) did not answer on port \(readyPort(ports)) within \(within)\(exited ? " (it exited)" : ""); its log ended: \(said)")
        }
        preconditionFailure("unreachable: the last attempt returns or throws")
    }

    /// Stops the server (SIGTERM, then SIGKILL after 5 s) and removes its directory.
    func stop() {
        let pid = self.pid.exchange(0, ordering: .acquiringAndReleasing)
        guard pid > 0 else { return }
        terminate(pid)
        removeTree(directory)
    }

    deinit {
        stop()
    }
}

/// Runs `body` with a server `start` makes, stopped when `body` returns or throws. Starting (and
/// stopping) waits for seconds: on `threads`, never on a thread the tests' own work runs on.
func withServer<S: Sendable, T: Sendable>(on threads: BlockingPool, start: @escaping @Sendable () throws -> S,
                                          stop: @escaping @Sendable (S) -> Void, _ body: (S) async throws -> T) async throws -> T {
    let server = try await threads.run { _ in try start() }
    do {
        let result = try await body(server)
        _ = try? await threads.run { _ in stop(server) }
        return result
    } catch {
        _ = try? await threads.run { _ in stop(server) }
        throw error
    }
}

/// The end of a log a test's program wrote (its last 2,000 bytes), for an error that outlives the
/// log's directory; empty when it cannot be read.
func logContains(_ path: String, _ text: String) -> Bool {
    (try? readFile(path)).map { String(decoding: $0, as: UTF8.self).contains(text) } ?? false
}

func logTail(_ path: String) -> String {
    (try? readFile(path)).map { String(decoding: $0.suffix(2000), as: UTF8.self) } ?? ""
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
public func freePorts(_ count: Int) throws -> [Int] {
    var sockets: [Int32] = []
    defer { sockets.forEach { close($0) } }
    var ports: [Int] = []
    for _ in 0..<count {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SetupError("socket failed") }
        sockets.append(fd)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw SetupError("bind failed") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        ports.append(Int(UInt16(bigEndian: address.sin_port)))
    }
    return ports
}

/// Starts a program with its output (both streams) to a file and no other descriptor of this
/// process; returns its pid. (Inheriting them, a SeaweedFS or curl started while a service test's
/// client waited for its idle connection to be closed kept the accepted socket open: the close
/// never reached the client, and the test failed after 5 s.)
func spawn(_ arguments: [String], output: String) throws -> pid_t {
    var argv = arguments.map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var pid: pid_t = 0
    let rc = attache_spawn_program(arguments[0], &argv, output, &pid)
    guard rc == 0 else { throw SetupError("cannot start \(arguments[0]): \(String(cString: strerror(rc)))") }
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
