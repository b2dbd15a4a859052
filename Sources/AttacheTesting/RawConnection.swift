#if canImport(Glibc)
import Glibc
#endif

/// A plain TCP connection to a server on loopback, for what an HTTP client would not send (a
/// request line dripped, a body held back).
public final class RawConnection {
    public let fd: Int32

    public init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard fd >= 0, connected == 0 else {
            Glibc.close(fd)
            throw SetupError("cannot connect to 127.0.0.1:\(port)")
        }
    }

    public func send(_ text: String) {
        _ = Array(text.utf8).withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Posts `body` to `path` with `fields`, its head first and the body only `after` later: the
    /// server's first answer, and how long after the body it came.
    public func postHoldingTheBody(_ path: String, fields: [String] = [], body: String, after: Duration) async throws
        -> (answer: String, afterBody: Duration) {
        send("POST \(path) HTTP/1.1\r\nHost: x\r\n" + fields.map { $0 + "\r\n" }.joined()
            + "Content-Length: \(body.utf8.count)\r\n\r\n")
        try await Task.sleep(for: after)
        let sent = ContinuousClock.now
        send(body)
        let answer = await readSome(within: .seconds(10)) ?? ""
        return (answer, sent.duration(to: .now))
    }

    /// What arrives until the server closes the connection; nil when it is still open after `limit`.
    public func readUntilClosed(within limit: Duration) async -> String? {
        var received: [UInt8] = []
        let end = ContinuousClock.now + limit
        while ContinuousClock.now < end {
            guard let chunk = await read(until: end) else { return nil }
            if chunk.isEmpty { return String(decoding: received, as: UTF8.self) }
            received += chunk
        }
        return nil
    }

    /// The first bytes that arrive within `limit`.
    public func readSome(within limit: Duration) async -> String? {
        guard let chunk = await read(until: ContinuousClock.now + limit), !chunk.isEmpty else { return nil }
        return String(decoding: chunk, as: UTF8.self)
    }

    /// One read: bytes, empty at end of stream (or a reset), nil when nothing came in time. Polls
    /// without blocking: a blocked thread of the (two-thread) cooperative pool would stall the
    /// server under test as well.
    private func read(until end: ContinuousClock.Instant) async -> [UInt8]? {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while poll(&poller, 1, 0) == 0 {
            guard ContinuousClock.now < end else { return nil }
            try? await Task.sleep(for: .milliseconds(10))
        }
        var buffer = [UInt8](repeating: 0, count: 65536)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        return n <= 0 ? [] : Array(buffer[..<n])
    }

    private var isOpen = true

    public func close() {
        if isOpen { Glibc.close(fd) }
        isOpen = false
    }

    deinit {
        close()
    }
}
