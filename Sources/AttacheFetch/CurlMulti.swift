// The one file that talks to libcurl. Each CURL* is owned by one `CurlTransfer`; the CURLM* by
// `CurlMulti`, which only the engine thread drives.
internal import CCurl
#if canImport(Glibc)
import Glibc
#endif

/// Turns libcurl return codes into errors, in one place.
func curlCheck(_ code: CURLcode, _ what: String) throws {
    guard code == CURLE_OK else {
        throw FetchError(.fetchFailed, "\(what): \(String(cString: curl_easy_strerror(code)))")
    }
}

enum CurlGlobal {
    /// curl_global_init is not thread-safe; Swift runs a static initialiser exactly once.
    static let initialised: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK
}

struct TransferSettings: Sendable {
    var policy: AddressPolicy
    var connectTimeoutMs: Int
    var lowSpeedLimit: Int
    var lowSpeedTime: Int
    var proxy: String?
    var userAgent: String
    var memoryThreshold: Int
    var tempDirectory: String
    var maxRedirects: Int
}

/// One transfer: its easy handle, its body, its result. Touched only by the engine thread once
/// added to the multi handle; before that only by the thread that made it.
final class CurlTransfer: @unchecked Sendable {
    let id: UInt64
    let easy: UnsafeMutableRawPointer
    let request: FetchRequest
    let deadline: ContinuousClock.Instant
    let policy: AddressPolicy
    let body: FetchedBody
    private var resolveList: UnsafeMutablePointer<curl_slist>?
    private var continuation: CheckedContinuation<FetchResult, any Error>?

    // Set by callbacks on the engine thread.
    var failure: FetchError?
    var deniedAddress: String?
    private var prefix: [UInt8] = []
    private var prefixDone = false
    private var cap: Int
    private var lastStatus = 0
    private var contentLength: Int64 = -1
    private var contentType: String?

    init(id: UInt64, request: FetchRequest, deadline: ContinuousClock.Instant, settings: TransferSettings) throws {
        guard CurlGlobal.initialised, let easy = curl_easy_init() else {
            throw FetchError(.fetchFailed, "curl_easy_init failed")
        }
        self.id = id
        self.easy = easy
        self.request = request
        self.deadline = deadline
        self.policy = settings.policy
        self.cap = request.maxBytes
        self.body = FetchedBody(threshold: settings.memoryThreshold, directory: settings.tempDirectory)
        try configure(settings)
    }

    deinit {
        curl_easy_cleanup(easy)
        if let resolveList { curl_slist_free_all(resolveList) }
    }

    func attach(_ continuation: CheckedContinuation<FetchResult, any Error>) {
        self.continuation = continuation
    }

    /// Resumes the waiting task exactly once.
    func complete(_ result: Result<FetchResult, any Error>) {
        body.finishWriting()
        request.trace?.record(timings())
        continuation?.resume(with: result)
        continuation = nil
    }

    private func setLong(_ option: CURLoption, _ value: Int) throws {
        try curlCheck(attache_curl_setopt_long(easy, option, value), "setopt")
    }

    private func setString(_ option: CURLoption, _ value: String) throws {
        try curlCheck(attache_curl_setopt_str(easy, option, value), "setopt")  // curl copies strings
    }

    private func configure(_ settings: TransferSettings) throws {
        try rejectUserInfo(request.url)
        let remaining = ContinuousClock.now.duration(to: deadline)
        let remainingMs = Int(remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000)
        guard remainingMs > 0 else { throw FetchError(.timeout, "deadline passed before the transfer started") }

        try setString(CURLOPT_URL, request.url)
        try setLong(CURLOPT_NOSIGNAL, 1)
        try setString(CURLOPT_PROTOCOLS_STR, "http,https")
        try setString(CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        try setLong(CURLOPT_FOLLOWLOCATION, 1)
        try setLong(CURLOPT_MAXREDIRS, settings.maxRedirects)
        // Proxy variables in the environment are ignored unless a proxy is configured.
        try setString(CURLOPT_PROXY, settings.proxy ?? "")
        try setString(CURLOPT_USERAGENT, settings.userAgent)
        try setLong(CURLOPT_TIMEOUT_MS, remainingMs)
        try setLong(CURLOPT_CONNECTTIMEOUT_MS, max(1, min(settings.connectTimeoutMs, remainingMs)))
        try setLong(CURLOPT_LOW_SPEED_LIMIT, settings.lowSpeedLimit)
        try setLong(CURLOPT_LOW_SPEED_TIME, settings.lowSpeedTime)
        try curlCheck(attache_curl_setopt_off_t(easy, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(request.maxBytes)), "setopt")
        // No CURLOPT_ACCEPT_ENCODING: media is compressed already, and a gzip bomb must stay small.

        for entry in request.resolve {
            resolveList = curl_slist_append(resolveList, entry)
        }
        if let resolveList {
            try curlCheck(attache_curl_setopt_slist(easy, CURLOPT_RESOLVE, resolveList), "setopt")
        }

        let me = Unmanaged.passUnretained(self).toOpaque()
        try curlCheck(attache_curl_setopt_ptr(easy, CURLOPT_WRITEDATA, me), "setopt")
        try curlCheck(attache_curl_setopt_ptr(easy, CURLOPT_HEADERDATA, me), "setopt")
        try curlCheck(attache_curl_setopt_ptr(easy, CURLOPT_OPENSOCKETDATA, me), "setopt")
        try curlCheck(attache_curl_setopt_data_fn(easy, CURLOPT_WRITEFUNCTION, curlWrite), "setopt")
        try curlCheck(attache_curl_setopt_data_fn(easy, CURLOPT_HEADERFUNCTION, curlHeader), "setopt")
        try curlCheck(attache_curl_setopt_opensocket_fn(easy, curlOpenSocket), "setopt")
    }

    private func rejectUserInfo(_ url: String) throws {
        guard let handle = curl_url() else { throw FetchError(.fetchFailed, "curl_url failed") }
        defer { curl_url_cleanup(handle) }
        guard curl_url_set(handle, CURLUPART_URL, url, 0) == CURLUE_OK else {
            throw FetchError(.fetchFailed, "not a valid URL")
        }
        var scheme: UnsafeMutablePointer<CChar>?
        if curl_url_get(handle, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK, let scheme {
            let name = String(cString: scheme).lowercased()
            curl_free(scheme)
            guard name == "http" || name == "https" else {
                throw FetchError(.fetchFailed, "scheme \(name) is not allowed")
            }
        }
        var user: UnsafeMutablePointer<CChar>?
        if curl_url_get(handle, CURLUPART_USER, &user, 0) == CURLUE_OK {
            curl_free(user)
            throw FetchError(.fetchFailed, "URLs with user information are refused")
        }
    }

    // MARK: callbacks (engine thread)

    /// Returns false to abort the transfer.
    func receive(_ buffer: UnsafeRawBufferPointer) -> Bool {
        if !prefixDone && request.inspectPrefix == nil {
            prefixDone = true
        }
        if !prefixDone {
            prefix.append(contentsOf: buffer.prefix(request.prefixLength - prefix.count))
            if prefix.count >= request.prefixLength, !inspectPrefix() { return false }
        }
        if body.count + buffer.count > cap {
            failure = FetchError(.tooLarge, "body exceeds \(cap) bytes", status: lastStatus)
            return false
        }
        guard body.append(buffer) else {
            failure = FetchError(.fetchFailed, "cannot write temp file", status: lastStatus)
            return false
        }
        return true
    }

    /// Runs the inspector once; false when it refuses the body.
    func inspectPrefix() -> Bool {
        guard !prefixDone else { return failure == nil }
        prefixDone = true
        guard let inspect = request.inspectPrefix else { return true }
        switch inspect(prefix) {
        case .accept(let maxBytes):
            cap = min(cap, maxBytes)
            if contentLength > cap {
                failure = FetchError(.tooLarge, "Content-Length \(contentLength) exceeds \(cap)", status: lastStatus)
                return false
            }
            return true
        case .reject(let reason, let message):
            failure = .rejected(reason: reason, message: message, status: lastStatus)
            return false
        }
    }

    /// One header line; at the blank line ending a final response, checks status and length.
    func header(_ line: String) -> Bool {
        if line.hasPrefix("HTTP/") {
            contentLength = -1
            contentType = nil
            let parts = line.split(separator: " ")
            lastStatus = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
            return true
        }
        if let colon = line.firstIndex(of: ":") {
            let name = line[..<colon].lowercased()
            let value = String(line[line.index(after: colon)...].drop(while: { $0 == " " || $0 == "\t" }).prefix(while: { !$0.isNewline }))
            if name == "content-length" { contentLength = Int64(value) ?? -1 }
            if name == "content-type" { contentType = value }
            return true
        }
        guard line == "\r\n" || line == "\n" else { return true }
        if (300..<400).contains(lastStatus) || lastStatus < 200 { return true }  // redirect or interim
        if lastStatus >= 400 {
            failure = FetchError(.fetchFailed, "HTTP status \(lastStatus)", status: lastStatus)
            return false
        }
        if contentLength > cap {
            failure = FetchError(.tooLarge, "Content-Length \(contentLength) exceeds \(cap)", status: lastStatus)
            return false
        }
        if contentLength > 0 { body.expect(Int(contentLength)) }
        return true
    }

    // MARK: results

    func result(code: CURLcode) -> Result<FetchResult, any Error> {
        if code == CURLE_OK && failure == nil && !prefixDone && !inspectPrefix() {
            return .failure(failure!)
        }
        if let failure { return .failure(failure) }
        if let deniedAddress {
            return .failure(FetchError(.addressDenied, "connection to \(deniedAddress) denied"))
        }
        guard code == CURLE_OK else { return .failure(translate(code)) }
        return .success(FetchResult(
            status: info(CURLINFO_RESPONSE_CODE),
            finalURL: infoString(CURLINFO_EFFECTIVE_URL) ?? request.url,
            contentType: contentType,
            bytes: body.count,
            redirects: info(CURLINFO_REDIRECT_COUNT),
            connectedIP: infoString(CURLINFO_PRIMARY_IP),
            newConnections: info(CURLINFO_NUM_CONNECTS),
            timings: timings(),
            body: body
        ))
    }

    /// The deadline passed while the transfer was still running.
    func timeoutError() -> FetchError {
        FetchError(.timeout, "deadline reached during transfer", status: lastStatus == 0 ? nil : lastStatus)
    }

    private func translate(_ code: CURLcode) -> FetchError {
        let message = String(cString: curl_easy_strerror(code))
        switch code {
        case CURLE_OPERATION_TIMEDOUT:
            if ContinuousClock.now >= deadline - .milliseconds(5) { return timeoutError() }
            return FetchError(.fetchFailed, "transfer too slow: \(message)", status: lastStatus)
        case CURLE_FILESIZE_EXCEEDED:
            return FetchError(.tooLarge, message, status: lastStatus)
        default:
            return FetchError(.fetchFailed, message, status: lastStatus == 0 ? nil : lastStatus)
        }
    }

    private func info(_ what: CURLINFO) -> Int {
        var value = 0
        _ = attache_curl_getinfo_long(easy, what, &value)
        return value
    }

    private func infoString(_ what: CURLINFO) -> String? {
        var value: UnsafeMutablePointer<CChar>?
        guard attache_curl_getinfo_str(easy, what, &value) == CURLE_OK, let value else { return nil }
        return String(cString: value)
    }

    func timings() -> FetchTimings {
        func ms(_ what: CURLINFO) -> Double {
            var micros: curl_off_t = 0
            _ = attache_curl_getinfo_off_t(easy, what, &micros)
            return Double(micros) / 1000
        }
        var t = FetchTimings()
        t.dns = ms(CURLINFO_NAMELOOKUP_TIME_T)
        t.connect = ms(CURLINFO_CONNECT_TIME_T)
        t.tls = ms(CURLINFO_APPCONNECT_TIME_T)
        t.firstByte = ms(CURLINFO_STARTTRANSFER_TIME_T)
        t.total = ms(CURLINFO_TOTAL_TIME_T)
        return t
    }
}

// C callbacks: no captures; the transfer comes through its user pointer. They never trap:
// anything unexpected returns curl's abort value.
private let curlWrite: attache_curl_data_fn = { data, size, count, user in
    guard let user, let data else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue()
    let n = size * count
    return transfer.receive(UnsafeRawBufferPointer(start: data, count: n)) ? n : 0
}

private let curlHeader: attache_curl_data_fn = { data, size, count, user in
    guard let user, let data else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue()
    let n = size * count
    let line = String(decoding: UnsafeRawBufferPointer(start: data, count: n), as: UTF8.self)
    return transfer.header(line) ? n : 0
}

private let curlOpenSocket: attache_curl_opensocket_fn = { user, purpose, address in
    guard let user, let address else { return attache_curl_socket_bad() }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue()
    var raw = [UInt8](repeating: 0, count: 16)
    let family = attache_curl_sockaddr_ip(address, &raw)
    guard family != 0, let ip = IPAddress(bytes: Array(raw.prefix(family == 4 ? 4 : 16))) else {
        transfer.deniedAddress = "non-IP address"
        return attache_curl_socket_bad()
    }
    if case .deny(let range) = transfer.policy.judge(ip) {
        transfer.deniedAddress = "\(ip) (\(range))"
        return attache_curl_socket_bad()
    }
    return attache_curl_open_socket(address)
}

/// The multi handle and the transfers in it; driven only by the engine thread.
final class CurlMulti {
    // Engine-thread only, apart from `wakeup`.
    private let multi: UnsafeMutableRawPointer
    private var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    private(set) var connectionsOpened = 0
    private(set) var bytesReceived = 0

    init(maxConnectionsPerHost: Int, maxConnections: Int) throws {
        guard CurlGlobal.initialised, let multi = curl_multi_init() else {
            throw FetchError(.fetchFailed, "curl_multi_init failed")
        }
        self.multi = multi
        _ = attache_curl_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, maxConnectionsPerHost)
        _ = attache_curl_multi_setopt_long(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, maxConnections)
        _ = attache_curl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, maxConnections)
        _ = attache_curl_multi_setopt_long(multi, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
    }

    private var closed = false

    deinit {
        close()
    }

    /// Ends what is in flight and frees the multi handle; nothing may call in afterwards.
    func close() {
        guard !closed else { return }
        closed = true
        cancelAll()
        curl_multi_cleanup(multi)
    }

    var activeCount: Int { active.count }

    /// Ends every transfer in flight (engine shutdown).
    func cancelAll() {
        for id in active.values.map(\.id) {
            remove(id: id, with: CancellationError())
        }
    }

    func add(_ transfer: CurlTransfer) {
        let code = curl_multi_add_handle(multi, transfer.easy)
        guard code == CURLM_OK else {
            transfer.complete(.failure(FetchError(.fetchFailed, String(cString: curl_multi_strerror(code)))))
            return
        }
        active[transfer.easy] = transfer
        deadlinesChanged = true
    }

    func remove(id: UInt64, with error: any Error) {
        guard let (easy, transfer) = active.first(where: { $0.value.id == id }) else { return }
        curl_multi_remove_handle(multi, easy)
        active[easy] = nil
        deadlinesChanged = true
        transfer.complete(.failure(error))
    }

    /// Drives transfers, finishes the done ones, and ends any that outlived their deadline.
    func perform() {
        var running: Int32 = 0
        _ = curl_multi_perform(multi, &running)
        var queued: Int32 = 0
        while let message = curl_multi_info_read(multi, &queued) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle,
                  let transfer = active.removeValue(forKey: easy) else { continue }
            deadlinesChanged = true
            let code = attache_curl_msg_result(message)
            curl_multi_remove_handle(multi, easy)
            let result = transfer.result(code: code)
            if case .success(let r) = result {
                connectionsOpened += r.newConnections
                bytesReceived += r.bytes
            }
            transfer.complete(result)
        }
        // curl's own TIMEOUT_MS normally ends these first; this is the backstop.
        let now = ContinuousClock.now
        guard let earliest = earliestDeadline, earliest < now else { return }
        for transfer in active.values where transfer.deadline < now {
            remove(id: transfer.id, with: transfer.timeoutError())
        }
    }

    /// The nearest deadline in flight, recomputed only after the set of transfers changed.
    private var earliestDeadline: ContinuousClock.Instant? {
        if deadlinesChanged {
            cachedEarliest = active.values.lazy.map(\.deadline).min()
            deadlinesChanged = false
        }
        return cachedEarliest
    }
    private var cachedEarliest: ContinuousClock.Instant?
    private var deadlinesChanged = false

    /// Sleeps until there is socket activity, a timeout curl wants, `wakeup()`, or `maxWaitMs`.
    func wait(maxWaitMs: Int32) {
        var fds: Int32 = 0
        _ = curl_multi_poll(multi, nil, 0, maxWaitMs, &fds)
    }

    /// Safe from any thread.
    func wakeup() {
        _ = curl_multi_wakeup(multi)
    }

    /// The time until the nearest deadline of a transfer in flight, capped.
    func nextDeadlineWait(cap: Int32) -> Int32 {
        guard let nearest = earliestDeadline else { return cap }
        let d = ContinuousClock.now.duration(to: nearest)
        let ms = d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000 + 1
        return Int32(max(0, min(Int64(cap), ms)))
    }
}
