import AttacheSupport
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A media origin for tests, demos and developers: serves files from a folder (or from memory)
/// on loopback, with faults chosen per request (see `OriginFault`). Plain sockets and one thread
/// per connection, so a stalled or hanging answer never holds up another.
public final class Origin: Sendable {
    public struct Statistics: Sendable {
        public var connections = 0
        public var requests = 0
        public var requestsByPath: [String: Int] = [:]
    }

    private struct State {
        var stats = Statistics()
        var stopped = false
        var sockets: Set<Int32> = []
    }

    private let state = Mutex(State())
    private let listener: Int32
    private let host: String
    /// Files are served from here, by path.
    private let root: String?
    /// Files served from memory, by path (`/cat.jpg`); they win over `root`.
    private let files: [String: [UInt8]]
    /// Faults by path (`/slow.jpg` → `["delay": "2000"]`), applied under the request's own query.
    private let faults: [String: [String: String]]
    public let port: Int

    /// Listens on `host` (an IPv4 address) and `port` (0: a free one, then `port` says which).
    public init(host: String = "127.0.0.1", port: Int = 0, root: String? = nil, files: [String: [UInt8]] = [:],
                faults: [String: [String: String]] = [:]) throws {
        self.host = host
        self.root = root
        self.files = files
        self.faults = faults
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw OriginError(.cannotListen, "socket failed: \(String(cString: strerror(errno)))") }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            close(fd)
            throw OriginError(.badHost, "origin host must be an IPv4 address, got \(host)")
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 1024) == 0 else {
            close(fd)
            throw OriginError(.cannotListen, "cannot listen on \(host):\(port)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listener = fd
        self.port = Int(UInt16(bigEndian: address.sin_port))
        startDetachedThread(name: "origin-accept") { [self] in self.acceptLoop() }
    }

    /// `http://127.0.0.1:PORT/path`.
    public func url(_ path: String) -> String {
        "http://\(host):\(port)\(path.hasPrefix("/") ? path : "/" + path)"
    }

    public var statistics: Statistics { state.withLock { $0.stats } }

    public var isStopped: Bool { state.withLock { $0.stopped } }

    /// Stops listening and closes every open connection, stalled ones included.
    public func stop() {
        let sockets = state.withLock { s -> Set<Int32> in
            s.stopped = true
            return s.sockets
        }
        shutdown(listener, Int32(SHUT_RDWR))
        for fd in sockets { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    deinit {
        close(listener)
    }

    private func acceptLoop() {
        while !isStopped {
            let fd = accept(listener, nil, nil)
            if fd < 0 {
                if errno == EINTR { continue }
                break
            }
            var yes: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
            let admitted = state.withLock { s -> Bool in
                guard !s.stopped else { return false }
                s.stats.connections += 1
                s.sockets.insert(fd)
                return true
            }
            guard admitted else { close(fd); break }
            startDetachedThread(name: "origin-conn") { [self] in
                var connection = OriginConnection(fd: fd, origin: self)
                connection.serve()
                state.withLock { _ = $0.sockets.remove(fd) }
                close(fd)
            }
        }
    }

    func record(path: String) {
        state.withLock {
            $0.stats.requests += 1
            $0.stats.requestsByPath[path, default: 0] += 1
        }
    }

    /// The path's configured faults, overridden by the request's query.
    func fault(path: String, query: [String: String]) -> OriginFault {
        OriginFault(query: (faults[path] ?? [:]).merging(query) { $1 })
    }

    func file(at path: String) -> [UInt8]? {
        if let bytes = files[path] { return bytes }
        guard let root, !path.contains(".."), path.hasPrefix("/") else { return nil }
        return readWholeFile(root + path)
    }
}

/// Why the origin cannot start: its host is not one it can listen on, or the socket cannot be
/// bound (the port taken, say).
public struct OriginError: Error, CustomStringConvertible {
    public enum Code: String, Sendable {
        case badHost = "bad-host"
        case cannotListen = "cannot-listen"
    }

    public let code: Code
    public let description: String

    init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }
}

func readWholeFile(_ path: String) -> [UInt8]? {
    try? readFile(path)
}
