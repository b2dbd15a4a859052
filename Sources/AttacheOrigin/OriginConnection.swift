#if canImport(Glibc)
import Glibc
#endif

/// One keep-alive HTTP/1.1 connection of the origin.
struct OriginConnection {
    let fd: Int32
    let origin: Origin
    private var buffer: [UInt8] = []

    init(fd: Int32, origin: Origin) {
        self.fd = fd
        self.origin = origin
    }

    mutating func serve() {
        while let request = readRequest() {
            origin.record(path: request.path)
            guard respond(to: request) else { return }
            if request.close { return }
        }
    }

    struct Request {
        var method: String
        var path: String
        var query: [String: String]
        var target: String
        var close: Bool
    }

    private mutating func readRequest() -> Request? {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            if let end = headerEnd() {
                let head = String(decoding: buffer[..<end], as: UTF8.self)
                buffer.removeFirst(end + 4)
                let lines = head.split(separator: "\r\n", omittingEmptySubsequences: false)
                let parts = lines.first?.split(separator: " ") ?? []
                guard parts.count >= 2 else { return nil }
                let target = String(parts[1])
                let pieces = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
                var query: [String: String] = [:]
                if pieces.count == 2 {
                    for pair in pieces[1].split(separator: "&") {
                        let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                        query[String(kv[0])] = kv.count == 2 ? percentDecode(String(kv[1])) : ""
                    }
                }
                let close = lines.contains { $0.lowercased().hasPrefix("connection:") && $0.lowercased().contains("close") }
                return Request(method: String(parts[0]), path: percentDecode(String(pieces[0])), query: query, target: target, close: close)
            }
            guard buffer.count < 64 * 1024 else { return nil }
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return nil }
            buffer.append(contentsOf: chunk[..<n])
        }
    }

    private func headerEnd() -> Int? {
        guard buffer.count >= 4 else { return nil }
        for i in 0...(buffer.count - 4) where buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 {
            return i
        }
        return nil
    }

    /// Returns false when the connection must close.
    private func respond(to request: Request) -> Bool {
        let fault = origin.fault(path: request.path, query: request.query)
        if fault.hang {
            waitUntilStopped(maxMs: 600_000)
            return false
        }
        if fault.delayMs > 0 && !sleepUnlessStopped(ms: fault.delayMs) { return false }

        if fault.redirects > 0 || fault.location != nil {
            var location = fault.location ?? ""
            if fault.location == nil {
                let rest = request.query.filter { $0.key != "redirect" }.map { "\($0.key)=\($0.value)" }.sorted()
                location = request.path + "?" + (["redirect=\(fault.redirects - 1)"] + rest).joined(separator: "&")
            }
            return send(head(302, ["Location: \(location)", "Content-Length: 0"]))
        }

        var status = fault.status
        var body = origin.file(at: request.path)
        var type = fault.contentType ?? contentType(for: request.path)
        if body == nil && status == 200 { status = 404 }
        if status >= 400 && (body == nil || fault.status >= 400) {
            body = Array("<html><body><h1>\(status)</h1></body></html>".utf8)
            if fault.contentType == nil { type = "text/html" }
        }
        let bytes = body ?? []
        var headers = ["Content-Type: \(type)"]
        if let encoding = fault.encoding { headers.append("Content-Encoding: \(encoding)") }
        if fault.endless {
            headers.append("Transfer-Encoding: chunked")
            guard send(head(status, headers)) else { return false }
            return sendEndless(fault: fault)
        }
        headers.append("Content-Length: \(fault.declaredLength ?? bytes.count)")
        guard send(head(status, headers)) else { return false }
        if request.method == "HEAD" { return true }
        if let stall = fault.stallAt {
            _ = sendBody(Array(bytes.prefix(stall.offset(in: bytes.count))), bytesPerSecond: fault.bytesPerSecond)
            waitUntilStopped(maxMs: 600_000)
            return false
        }
        let limit = [fault.truncateAt, fault.resetAt].compactMap { $0?.offset(in: bytes.count) }.min() ?? bytes.count
        let sent = sendBody(Array(bytes.prefix(limit)), bytesPerSecond: fault.bytesPerSecond)
        if fault.resetAt != nil {
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
            return false
        }
        return sent && limit == bytes.count && fault.declaredLength == nil
    }

    private func head(_ status: Int, _ headers: [String]) -> [UInt8] {
        Array((["HTTP/1.1 \(status) \(reasonPhrase(status))"] + headers + ["", ""]).joined(separator: "\r\n").utf8)
    }

    private func sendBody(_ bytes: [UInt8], bytesPerSecond: Int?) -> Bool {
        guard let rate = bytesPerSecond else { return send(bytes) }
        // Ten ticks a second, at least one byte a tick, so a 1 B/s drip still drips.
        let perTick = max(1, rate / 10)
        let tickMs = rate >= 10 ? 100 : 1000 / rate
        var offset = 0
        while offset < bytes.count {
            let end = min(bytes.count, offset + perTick)
            guard send(Array(bytes[offset..<end])) else { return false }
            offset = end
            if offset < bytes.count && !sleepUnlessStopped(ms: tickMs) { return false }
        }
        return true
    }

    private func sendEndless(fault: OriginFault) -> Bool {
        let block = [UInt8](repeating: 0x41, count: 16 * 1024)
        let chunk = Array("4000\r\n".utf8) + block + Array("\r\n".utf8)
        while !origin.isStopped {
            guard send(chunk) else { return false }
            if let rate = fault.bytesPerSecond, !sleepUnlessStopped(ms: max(1, 16 * 1024 * 1000 / rate)) { return false }
        }
        return false
    }

    private func send(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            offset += n
        }
        return true
    }

    private func sleepUnlessStopped(ms: Int) -> Bool {
        var left = ms
        while left > 0 {
            if origin.isStopped { return false }
            let step = min(left, 20)
            usleep(UInt32(step * 1000))
            left -= step
        }
        return !origin.isStopped
    }

    private func waitUntilStopped(maxMs: Int) {
        _ = sleepUnlessStopped(ms: maxMs)
    }
}

func contentType(for path: String) -> String {
    let ext = path.split(separator: ".").last.map { $0.lowercased() } ?? ""
    switch ext {
    case "jpg", "jpeg": return "image/jpeg"
    case "png": return "image/png"
    case "gif": return "image/gif"
    case "webp": return "image/webp"
    case "mp4", "m4v": return "video/mp4"
    case "mov": return "video/quicktime"
    case "webm": return "video/webm"
    case "mp3": return "audio/mpeg"
    case "m4a": return "audio/mp4"
    case "json": return "application/json"
    case "html": return "text/html"
    default: return "application/octet-stream"
    }
}

func reasonPhrase(_ status: Int) -> String {
    switch status {
    case 200: return "OK"
    case 206: return "Partial Content"
    case 301: return "Moved Permanently"
    case 302: return "Found"
    case 404: return "Not Found"
    case 500: return "Internal Server Error"
    case 503: return "Service Unavailable"
    default: return "Status"
    }
}

func percentDecode(_ s: String) -> String {
    var out: [UInt8] = []
    var bytes = Array(s.utf8)[...]
    while let b = bytes.popFirst() {
        if b == UInt8(ascii: "%"), bytes.count >= 2,
           let v = UInt8(String(decoding: bytes.prefix(2), as: UTF8.self), radix: 16) {
            out.append(v)
            bytes = bytes.dropFirst(2)
        } else {
            out.append(b == UInt8(ascii: "+") ? 32 : b)
        }
    }
    return String(decoding: out, as: UTF8.self)
}
