// The one file that talks to libcurl. Each CURL* is owned by one `CurlTransfer`; the CURLM* by
// `CurlMulti`, which only the engine thread drives.
internal import CCurl
import AttacheSupport
#if canImport(Glibc)
import Glibc
#endif

/// Turns libcurl return codes into errors, in one place.
func curlCheck(_ code: CURLcode, _ what: String) throws {
    guard code == CURLE_OK else {
        throw FetchError(.fetchFailed, "\(what): \(String(cString: attache_curl_easy_strerror(code)))")
    }
}

enum CurlLibrary {
    /// libcurl is loaded (and initialised) on first use; nil when that worked, else why not.
    private static let failure: String? = {
        var message = [CChar](repeating: 0, count: 200)
        guard attache_curl_load(&message, message.count) != 1 else { return nil }
        return String(cBuffer: message)
    }()

    static func load() throws {
        if let failure { throw FetchError(.fetchFailed, failure) }
    }
}

/// One transfer: its easy handle, its body, its result. Touched only by the engine thread once
/// handed to the engine; before that only by the thread that made it.
final class CurlTransfer: @unchecked Sendable {
    /// Bytes read per recv(): curl's own command line's 100 KB (see `configure`).
    static let receiveBufferSize = 100 * 1024
    let id: UInt64
    /// Made by `open()` when the engine admits the transfer, not before: a waiting transfer costs
    /// no curl memory (an easy handle is tens of KB).
    private(set) var easy: UnsafeMutableRawPointer?
    private let settings: FetchEngine.Configuration
    let request: FetchRequest
    let deadline: ContinuousClock.Instant
    let policy: AddressPolicy
    let body: FetchedBody
    /// `scheme://host:port` of the first URL: the engine admits a few transfers per origin at a
    /// time into the multi handle and queues the rest itself.
    let origin: String
    private var headerList: UnsafeMutablePointer<curl_slist>?
    /// How much of `request.upload` curl has read.
    private var uploaded = 0
    /// The upload's whole length (set when it is opened).
    private var uploadLength: Int64 = 0
    /// The open file of an `.file` upload (closed with the transfer).
    private var uploadFile: RegularFile?
    private var continuation: CheckedContinuation<FetchResult, any Error>?

    // Set by callbacks on the engine thread.
    var failure: FetchError?
    var deniedAddress: String?
    private var prefix: [UInt8] = []
    private var prefixDone = false
    private var received = 0
    private var cap: Int
    private var lastStatus = 0
    private var contentLength: Int64 = -1
    private var contentType: String?

    init(id: UInt64, request: FetchRequest, deadline: ContinuousClock.Instant, settings: FetchEngine.Configuration) throws {
        self.id = id
        self.settings = settings
        self.request = request
        self.deadline = deadline
        self.policy = settings.policy
        self.cap = request.maxBytes
        self.connectTimeoutMs = Int(settings.connectTimeout.milliseconds)
        self.body = FetchedBody(threshold: settings.memoryThreshold, directory: settings.tempDirectory)
        self.origin = try Self.checkedOrigin(request.url, allowedHosts: request.allowedHosts, settings: settings)
    }

    deinit {
        if let easy { attache_curl_easy_cleanup(easy) }
        if let headerList { attache_curl_slist_free_all(headerList) }
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

    /// Makes and configures the easy handle, with time limits from what is left of the deadline
    /// (engine thread, when the transfer is admitted).
    func open() throws {
        guard easy == nil else { return }
        try CurlLibrary.load()
        guard let handle = attache_curl_easy_init() else {
            throw FetchError(.fetchFailed, "curl_easy_init failed")
        }
        easy = handle
        try configure(settings)
    }

    private func setLong(_ option: CURLoption, _ value: Int) throws {
        try curlCheck(attache_curl_setopt_long(easy, option, value), "setopt")
    }

    private let connectTimeoutMs: Int

    /// Sets curl's time limits from what is left of the deadline (curl counts them from when the
    /// transfer enters the multi handle).
    private func startClock() throws {
        let remaining = ContinuousClock.now.duration(to: deadline)
        let remainingMs = Int(remaining.milliseconds)
        guard remainingMs > 0 else { throw FetchError(.timeout, "deadline passed before the transfer started") }
        try setLong(CURLOPT_TIMEOUT_MS, remainingMs)
        try setLong(CURLOPT_CONNECTTIMEOUT_MS, max(1, min(connectTimeoutMs, remainingMs)))
    }

    private func setString(_ option: CURLoption, _ value: String) throws {
        try curlCheck(attache_curl_setopt_str(easy, option, value), "setopt")  // curl copies strings
    }

    private func configure(_ settings: FetchEngine.Configuration) throws {
        try startClock()

        try setString(CURLOPT_URL, request.url)
        try setLong(CURLOPT_NOSIGNAL, 1)
        // curl's own command line reads 100 KB per recv(); the library default of 16 KB makes a
        // 4 MB body cost 256 system calls instead of ~40.
        try setLong(CURLOPT_BUFFERSIZE, Self.receiveBufferSize)
        try setString(CURLOPT_PROTOCOLS_STR, "http,https")
        try setString(CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        try setLong(CURLOPT_FOLLOWLOCATION, request.followRedirects ? 1 : 0)
        try setLong(CURLOPT_MAXREDIRS, settings.maxRedirects)
        // Proxy variables in the environment are ignored unless a proxy is configured.
        try setString(CURLOPT_PROXY, settings.proxy ?? "")
        try setString(CURLOPT_USERAGENT, settings.userAgent)
        if let caFile = settings.caFile { try setString(CURLOPT_CAINFO, caFile) }
        try setLong(CURLOPT_LOW_SPEED_LIMIT, settings.lowSpeedLimit)
        lowSpeedWindow = Self.lowSpeedWindow(settings, deadline: deadline)
        try setLong(CURLOPT_LOW_SPEED_TIME, lowSpeedWindow)
        try curlCheck(attache_curl_setopt_off_t(easy, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(request.maxBytes)), "setopt")
        // No CURLOPT_ACCEPT_ENCODING: media is compressed already, and a gzip bomb must stay small.

        try configureMethod()

        let me = Unmanaged.passUnretained(self).toOpaque()
        try curlCheck(attache_curl_setopt_ptr(easy, CURLOPT_WRITEDATA, me), "setopt")
        try curlCheck(attache_curl_setopt_ptr(easy, CURLOPT_HEADERDATA, me), "setopt")
        try curlCheck(attache_curl_setopt_ptr(easy, CURLOPT_OPENSOCKETDATA, me), "setopt")
        try curlCheck(attache_curl_setopt_data_fn(easy, CURLOPT_WRITEFUNCTION, curlWrite), "setopt")
        try curlCheck(attache_curl_setopt_data_fn(easy, CURLOPT_HEADERFUNCTION, curlHeader), "setopt")
        try curlCheck(attache_curl_setopt_opensocket_fn(easy, curlOpenSocket), "setopt")
    }

    /// HEAD and PUT (read from `request.upload` as curl asks), extra headers, and the AWS signature.
    private func configureMethod() throws {
        var headers = request.headers
        switch request.method {
        case .get: break
        case .head: try setLong(CURLOPT_NOBODY, 1)
        case .put:
            try setLong(CURLOPT_UPLOAD, 1)
            try configureUpload(lengthOption: CURLOPT_INFILESIZE_LARGE)
            // curl's own `Expect: 100-continue` stays: removing it ("Expect:") leaves it among
            // the headers curl 7.88 signs, and S3 then refuses the signature.
        case .post:
            try setLong(CURLOPT_POST, 1)
            try configureUpload(lengthOption: CURLOPT_POSTFIELDSIZE_LARGE)
        }
        if let signature = request.signature {
            try setString(CURLOPT_AWS_SIGV4, "aws:amz:\(signature.region):\(signature.service)")
            try setString(CURLOPT_USERNAME, signature.accessKey)
            try setString(CURLOPT_PASSWORD, signature.secretKey)
            if let token = signature.sessionToken { headers.append("x-amz-security-token: \(token)") }
        }
        for header in headers {
            headerList = attache_curl_slist_append(headerList, header)
        }
        if let headerList {
            try curlCheck(attache_curl_setopt_slist(easy, CURLOPT_HTTPHEADER, headerList), "setopt")
        }
    }

    /// The body of a PUT or a POST, read from `request.upload` as curl asks for it, its length given
    /// with `lengthOption`. It can be rewound: an HTTP/2 upstream that refuses a stream (past its
    /// concurrency limit, or at GOAWAY) is answered by a retry, which needs the body from its start;
    /// a read callback alone makes that retry fail (`CURLE_SEND_FAIL_REWIND`).
    private func configureUpload(lengthOption: CURLoption) throws {
        let this = Unmanaged.passUnretained(self).toOpaque()
        try curlCheck(attache_curl_setopt_off_t(easy, lengthOption, curl_off_t(try openUpload())), "setopt")
        try curlCheck(attache_curl_setopt_ptr(easy, CURLOPT_READDATA, this), "setopt")
        try curlCheck(attache_curl_setopt_data_fn(easy, CURLOPT_READFUNCTION, curlRead), "setopt")
        try curlCheck(attache_curl_setopt_ptr(easy, CURLOPT_SEEKDATA, this), "setopt")
        try curlCheck(attache_curl_setopt_seek_fn(easy, curlSeek), "setopt")
    }

    /// Moves the upload to `offset` from its start (engine thread).
    func rewind(to offset: Int64, origin: Int32) -> Int32 {
        guard origin == SEEK_SET, offset >= 0, offset <= uploadLength else { return Int32(CURL_SEEKFUNC_CANTSEEK) }
        uploaded = Int(offset)
        return Int32(CURL_SEEKFUNC_OK)
    }

    /// The upload's length; opens its file, if it is one.
    private func openUpload() throws -> Int {
        let length: Int
        switch request.upload {
        case nil: length = 0
        case .bytes(let bytes): length = bytes.count
        case .file(let path):
            do {
                let file = try RegularFile(path)
                uploadFile = file
                length = file.size
            } catch {
                throw FetchError(.fetchFailed, "cannot read the upload \(path)")
            }
        }
        uploadLength = Int64(length)
        return length
    }

    /// The next piece of the upload (engine thread); `CURL_READFUNC_ABORT` when its file cannot
    /// be read.
    func send(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        switch request.upload {
        case nil: return 0
        case .bytes(let upload):
            let n = min(buffer.count, upload.count - uploaded)
            guard n > 0 else { return 0 }
            upload.withUnsafeBytes { source in
                buffer.baseAddress!.copyMemory(from: source.baseAddress! + uploaded, byteCount: n)
            }
            uploaded += n
            return n
        case .file:
            guard let n = try? uploadFile?.read(at: uploaded, into: buffer) else { return Int(CURL_READFUNC_ABORT) }
            uploaded += n
            return n
        }
    }

    /// Refuses other schemes, URLs with user information and URLs with control characters (a NUL
    /// would cut the URL short where curl reads it: `/ok.jpg\0@169.254.169.254/`); returns
    /// `scheme://host:port`.
    private static func checkedOrigin(_ url: String, allowedHosts: HostAllowlist?, settings: FetchEngine.Configuration) throws -> String {
        try CurlLibrary.load()
        let parsed = try ParsedURL(url)
        try parsed.judgeHost(allowedHosts)
        try parsed.judgeThroughProxy(settings)
        return "\(parsed.scheme)://\(parsed.host):\(parsed.port)"
    }

    /// A URL as curl reads it, checked: http or https, no user information, no control characters.
    /// `base` resolves a relative URL (a redirect's `Location`).
    struct ParsedURL {
        var scheme: String
        var host: String
        var port: String
        var path: String

        init(_ url: String, base: String? = nil) throws {
            guard !url.utf8.contains(where: { $0 < 0x20 || $0 == 0x7f }) else {
                throw FetchError(.fetchFailed, "not a valid URL: control characters")
            }
            guard let handle = attache_curl_url() else { throw FetchError(.fetchFailed, "curl_url failed") }
            defer { attache_curl_url_cleanup(handle) }
            if let base, attache_curl_url_set(handle, CURLUPART_URL, base, 0) != CURLUE_OK {
                throw FetchError(.fetchFailed, "not a valid URL")
            }
            guard attache_curl_url_set(handle, CURLUPART_URL, url, 0) == CURLUE_OK else {
                throw FetchError(.fetchFailed, "not a valid URL")
            }
            func part(_ which: CURLUPart, _ flags: UInt32 = 0) -> String? {
                var value: UnsafeMutablePointer<CChar>?
                guard attache_curl_url_get(handle, which, &value, flags) == CURLUE_OK, let value else { return nil }
                defer { attache_curl_free(value) }
                return String(cString: value)
            }
            scheme = part(CURLUPART_SCHEME)?.lowercased() ?? ""
            guard scheme == "http" || scheme == "https" else {
                throw FetchError(.fetchFailed, "scheme \(scheme) is not allowed")
            }
            guard part(CURLUPART_USER) == nil, part(CURLUPART_PASSWORD) == nil else {
                throw FetchError(.fetchFailed, "URLs with user information are refused")
            }
            host = part(CURLUPART_HOST)?.lowercased() ?? ""
            port = part(CURLUPART_PORT, UInt32(CURLU_DEFAULT_PORT)) ?? ""
            path = part(CURLUPART_PATH) ?? "/"
        }

        /// A host outside the allowlist is refused by name, before any lookup or connection.
        func judgeHost(_ allowed: HostAllowlist?) throws {
            guard let allowed, !allowed.allows(host: host) else { return }
            throw FetchError(.hostNotAllowed, "\(host) is not among the allowed media hosts (\(allowed))")
        }

        /// Through a proxy, curl connects to the proxy, never to the target, so the address policy
        /// cannot judge where the request goes: a target given as an address literal is judged
        /// here; a name is resolved by the proxy, which must enforce its own rules.
        func judgeThroughProxy(_ settings: FetchEngine.Configuration) throws {
            guard settings.proxy != nil else { return }
            let literal = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
            guard let address = IPAddress(literal), case .deny(let why) = settings.policy.judge(address) else { return }
            throw FetchError(.addressDenied, "\(literal) is \(why) (through the proxy)")
        }
    }

    /// Seconds under `lowSpeedLimit` bytes a second after which the origin is given up on: two
    /// thirds of the time this transfer has (at least the configured window; 0 keeps it off). A
    /// long deadline is not cut short by a fixed window: an origin that is slow to start but
    /// then sends, within the deadline, is waited for.
    static func lowSpeedWindow(_ settings: FetchEngine.Configuration, deadline: ContinuousClock.Instant) -> Int {
        guard settings.lowSpeedTime > 0 else { return 0 }
        let budget = max(0, ContinuousClock.now.duration(to: deadline).seconds)
        return max(settings.lowSpeedTime, min(3600, Int((budget * 2 / 3).rounded(.up))))
    }

    /// The window the transfer was given (`lowSpeedWindow(_:deadline:)`, at its setup).
    private var lowSpeedWindow = 0

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
        if received + buffer.count > cap {
            failure = FetchError(.tooLarge, "body exceeds \(cap) bytes", status: lastStatus)
            return false
        }
        if let allowance = request.allowance, !allowance(buffer.count) {
            failure = FetchError(.quotaExceeded, "the daily download quota ran out after \(received) bytes of this body", status: lastStatus)
            return false
        }
        received += buffer.count
        if let consumer = request.stream {
            guard consumer(buffer) else {
                failure = FetchError(.fetchFailed, "stopped by the consumer", status: lastStatus)
                return false
            }
            return true
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
        case .reject(let error):
            failure = .rejected(by: error, status: lastStatus)
            return false
        }
    }

    /// One header line, as received (with its line ending); at the blank line ending a final
    /// response, checks status and length. Works on the bytes: only Content-Type becomes a String.
    func header(_ line: UnsafeRawBufferPointer) -> Bool {
        let text = HeaderLine(line)
        if text.hasPrefix("HTTP/") {
            contentLength = -1
            contentType = nil
            lastStatus = text.statusCode ?? 0
            return true
        }
        if let value = text.value(of: "content-length") {
            contentLength = Int64(String(decoding: value, as: UTF8.self)) ?? -1
            return true
        }
        if let value = text.value(of: "content-type") {
            contentType = String(decoding: value, as: UTF8.self)
            return true
        }
        if (300..<400).contains(lastStatus), let value = text.value(of: "location") {
            // curl would follow it, and send its user information as Basic credentials: every
            // hop is held to the rules of the first URL before curl sees it.
            do {
                let hop = try ParsedURL(String(decoding: value, as: UTF8.self), base: infoString(CURLINFO_EFFECTIVE_URL) ?? request.url)
                try hop.judgeHost(request.allowedHosts)
                try hop.judgeThroughProxy(settings)
            } catch let error as FetchError {
                failure = FetchError(error.code == .addressDenied || error.code == .hostNotAllowed ? error.code : .fetchFailed,
                                     "redirect refused: \(error.message)", status: lastStatus)
                return false
            } catch {
                return false
            }
            return true
        }
        guard text.isBlank else { return true }
        if (300..<400).contains(lastStatus) || lastStatus < 200 { return true }  // redirect or interim
        if lastStatus >= 400 {
            failure = FetchError(.fetchFailed, "HTTP status \(lastStatus)", status: lastStatus)
            return false
        }
        if contentLength > cap {
            failure = FetchError(.tooLarge, "Content-Length \(contentLength) exceeds \(cap)", status: lastStatus)
            return false
        }
        if contentLength > 0 && request.stream == nil { body.expect(Int(contentLength)) }
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
            bytes: received,
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
        let message = String(cString: attache_curl_easy_strerror(code))
        switch code {
        case CURLE_OPERATION_TIMEDOUT:
            if ContinuousClock.now >= deadline - .milliseconds(5) { return timeoutError() }
            return FetchError(.tooSlow, "the origin sent under \(settings.lowSpeedLimit) bytes a second for \(lowSpeedWindow) s "
                + "(\(received) bytes had arrived)", status: lastStatus == 0 ? nil : lastStatus)
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
        guard let easy else { return FetchTimings() }  // never admitted
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

private let curlRead: attache_curl_data_fn = { data, size, count, user in
    guard let user, let data else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue()
    return transfer.send(into: UnsafeMutableRawBufferPointer(start: data, count: size * count))
}

private let curlSeek: attache_curl_seek_fn = { user, offset, origin in
    guard let user else { return Int32(CURL_SEEKFUNC_FAIL) }
    return Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue().rewind(to: Int64(offset), origin: origin)
}

private let curlHeader: attache_curl_data_fn = { data, size, count, user in
    guard let user, let data else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue()
    let n = size * count
    return transfer.header(UnsafeRawBufferPointer(start: data, count: n)) ? n : 0
}

private let curlOpenSocket: attache_curl_opensocket_fn = { user, purpose, address in
    guard let user, let address else { return attache_curl_socket_bad() }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue()
    var raw = [UInt8](repeating: 0, count: 16)
    var port: UInt16 = 0
    let family = attache_curl_sockaddr_ip(address, &raw, &port)
    guard family != 0, let ip = IPAddress(bytes: Array(raw.prefix(family == 4 ? 4 : 16))) else {
        transfer.deniedAddress = "non-IP address"
        return attache_curl_socket_bad()
    }
    if case .deny(let range) = transfer.policy.judge(ip, port: Int(port)) {
        transfer.deniedAddress = "\(ip) (\(range))"
        return attache_curl_socket_bad()
    }
    return attache_curl_open_socket(address)
}

/// The multi handle and the transfers in it; driven only by the engine thread.
///
/// Each origin (`scheme://host:port`) has at most `perOriginWindow` transfers inside curl; the
/// rest wait here in arrival order. curl would queue them itself, but a queued easy handle is not
/// free there: it already holds its receive buffer and every `curl_multi_perform` walks it, which
/// made a thousand queued small downloads twice as slow. Other origins are never held up.
final class CurlMulti {
    // Engine-thread only, apart from `wakeup`.
    private let multi: UnsafeMutableRawPointer
    private var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    private var admitted: [String: Int] = [:]
    private var waiting: [String: WaitQueue] = [:]
    private var waitingCount = 0
    /// No later than the earliest deadline among waiting transfers (exact after each sweep).
    private var waitingEarliest: ContinuousClock.Instant?
    private let perOriginWindow: Int
    private(set) var connectionsOpened = 0
    private(set) var bytesReceived = 0

    /// First in, first out, without shifting the array on every take.
    private struct WaitQueue {
        var items: [CurlTransfer] = []
        var head = 0
        var isEmpty: Bool { head == items.count }
        mutating func take() -> CurlTransfer? {
            guard !isEmpty else { return nil }
            defer { head += 1; if head == items.count { items = []; head = 0 } }
            return items[head]
        }
        var pending: ArraySlice<CurlTransfer> { items[head...] }
        mutating func removeAll(where match: (CurlTransfer) -> Bool) -> [CurlTransfer] {
            let gone = pending.filter(match)
            if !gone.isEmpty { items = pending.filter { !match($0) }; head = 0 }
            return gone
        }
    }

    init(maxConnectionsPerHost: Int, maxConnections: Int, perOriginWindow: Int) throws {
        try CurlLibrary.load()
        guard let multi = attache_curl_multi_init() else {
            throw FetchError(.fetchFailed, "curl_multi_init failed")
        }
        self.multi = multi
        self.perOriginWindow = max(1, perOriginWindow)
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
        attache_curl_multi_cleanup(multi)
    }

    /// Transfers inside curl plus those waiting for their origin's window.
    var activeCount: Int { active.count + waitingCount }

    /// Ends every transfer in flight or waiting (engine shutdown).
    func cancelAll() {
        let queued = waiting.values.flatMap(\.pending)
        waiting = [:]
        waitingCount = 0
        for transfer in queued { transfer.complete(.failure(CancellationError())) }
        for id in active.values.map(\.id) {
            remove(id: id, with: CancellationError())
        }
    }

    func add(_ transfer: CurlTransfer) {
        waiting[transfer.origin, default: WaitQueue()].items.append(transfer)
        waitingCount += 1
        waitingEarliest = min(waitingEarliest ?? transfer.deadline, transfer.deadline)
        admitWaiting(transfer.origin)
    }

    /// Fills the origin's window from its queue (a transfer that fails to start leaves its slot
    /// to the next one).
    private func admitWaiting(_ origin: String) {
        while admitted[origin, default: 0] < perOriginWindow, let next = waiting[origin]?.take() {
            waitingCount -= 1
            if waiting[origin]?.isEmpty == true { waiting[origin] = nil }
            admit(next)
        }
    }

    private func admit(_ transfer: CurlTransfer) {
        do {
            try transfer.open()
        } catch {
            transfer.complete(.failure(error))
            return
        }
        guard let easy = transfer.easy else { return }
        let code = attache_curl_multi_add_handle(multi, easy)
        guard code == CURLM_OK else {
            transfer.complete(.failure(FetchError(.fetchFailed, String(cString: attache_curl_multi_strerror(code)))))
            return
        }
        active[easy] = transfer
        admitted[transfer.origin, default: 0] += 1
        deadlinesChanged = true
    }

    /// A transfer of `origin` left curl: the next one waiting for that origin takes its place.
    private func released(_ origin: String) {
        let left = admitted[origin, default: 1] - 1
        admitted[origin] = left > 0 ? left : nil
        admitWaiting(origin)
    }

    func remove(id: UInt64, with error: any Error) {
        if let (easy, transfer) = active.first(where: { $0.value.id == id }) {
            attache_curl_multi_remove_handle(multi, easy)
            active[easy] = nil
            deadlinesChanged = true
            transfer.complete(.failure(error))
            released(transfer.origin)
            return
        }
        for origin in Array(waiting.keys) {
            guard let gone = waiting[origin]?.removeAll(where: { $0.id == id }), !gone.isEmpty else { continue }
            waitingCount -= gone.count
            if waiting[origin]?.isEmpty == true { waiting[origin] = nil }
            gone.forEach { $0.complete(.failure(error)) }
            return
        }
    }

    /// Drives transfers, finishes the done ones, and ends any that outlived their deadline.
    func perform() {
        var running: Int32 = 0
        _ = attache_curl_multi_perform(multi, &running)
        var queued: Int32 = 0
        while let message = attache_curl_multi_info_read(multi, &queued) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle,
                  let transfer = active.removeValue(forKey: easy) else { continue }
            deadlinesChanged = true
            let code = attache_curl_msg_result(message)
            attache_curl_multi_remove_handle(multi, easy)
            let result = transfer.result(code: code)
            if case .success(let r) = result {
                connectionsOpened += r.newConnections
                bytesReceived += r.bytes
            }
            transfer.complete(result)
            released(transfer.origin)
        }
        // curl's own TIMEOUT_MS normally ends these first; this is the backstop.
        let now = ContinuousClock.now
        if let earliest = earliestDeadline, earliest < now {
            for transfer in active.values where transfer.deadline < now {
                remove(id: transfer.id, with: transfer.timeoutError())
            }
        }
        if let earliest = waitingEarliest, earliest < now {
            for origin in Array(waiting.keys) {
                let late = waiting[origin]?.removeAll(where: { $0.deadline < now }) ?? []
                waitingCount -= late.count
                if waiting[origin]?.isEmpty == true { waiting[origin] = nil }
                late.forEach { $0.complete(.failure($0.timeoutError())) }
            }
            waitingEarliest = waiting.values.lazy.flatMap(\.pending).map(\.deadline).min()
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
        _ = attache_curl_multi_poll(multi, maxWaitMs, &fds)
    }

    /// Safe from any thread.
    func wakeup() {
        _ = attache_curl_multi_wakeup(multi)
    }

    /// The time until the nearest deadline of a transfer in flight or waiting, capped.
    func nextDeadlineWait(cap: Int32) -> Int32 {
        let nearest = [earliestDeadline, waitingEarliest].compactMap { $0 }.min()
        guard let nearest else { return cap }
        let d = ContinuousClock.now.duration(to: nearest)
        let ms = Int64(d.milliseconds) + 1
        return Int32(max(0, min(Int64(cap), ms)))
    }
}

/// What may be said of a media URL outside the fetch (a trace's span): read as the fetch reads it
/// (curl's URL parser), with no user information, query or fragment, which may carry a signature.
public struct URLSummary: Sendable {
    public let scheme: String
    /// Without an IPv6 literal's brackets.
    public let host: String
    public let port: Int?
    /// `scheme://host:port/path`.
    public let withoutQuery: String

    /// Nil for a URL the fetch would refuse to read.
    public init?(_ url: String) {
        guard (try? CurlLibrary.load()) != nil, let parsed = try? CurlTransfer.ParsedURL(url) else { return nil }
        scheme = parsed.scheme
        host = parsed.host.hasPrefix("[") ? String(parsed.host.dropFirst().dropLast()) : parsed.host
        port = Int(parsed.port)
        withoutQuery = "\(parsed.scheme)://\(parsed.host):\(parsed.port)\(parsed.path)"
    }
}
