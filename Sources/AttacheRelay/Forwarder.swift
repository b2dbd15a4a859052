import AttacheFetch

/// Sends a request on to Apple or Google and brings back what they answered. libcurl's multi
/// handle (the fetch engine's) runs it over HTTP/2, waiting for an open connection to the same
/// upstream and multiplexing on it, so many notifications share few long-lived connections, as
/// Apple asks of providers. The upstream is configured, not named by a request: no address policy.
public struct Forwarder: Sendable {
    /// What the upstream answered.
    public struct Answer: Sendable {
        public var status: Int
        /// The response fields a client of Apple's or Google's reads (`apns-id`, …).
        public var headers: [(name: String, value: String)]
        public var body: [UInt8]
    }

    /// The response fields passed back to the client.
    static let answeredFields: Set<String> = ["apns-id", "apns-unique-id", "content-type", "retry-after"]
    /// Request fields that belong to one hop, or to HTTP/2's own framing, or to the relay.
    static let hopFields: Set<String> = [
        "host", "content-length", "connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "upgrade",
        "expect", "attache-deadline-ms",
    ]

    let engine: FetchEngine

    /// `caFile`: the authorities to trust for the upstream instead of the system's (a private
    /// upstream, a double with a test CA).
    public init(tempDirectory: String, caFile: String? = nil) throws {
        engine = try FetchEngine(configuration: .init(
            policy: .anyAddress, tempDirectory: tempDirectory, caFile: caFile
        ))
    }

    /// `fields` are the client's request fields (lower-case names), passed on but for the hop's
    /// own; fields curl would add of itself (Accept, a form Content-Type, User-Agent) are not
    /// added, so the upstream sees what the client sent.
    public func forward(_ url: String, fields: [(name: String, value: String)], body: [UInt8],
                        timeout: Duration) async throws -> Answer {
        var request = FetchRequest(url: url, maxBytes: 1 << 20)
        request.method = .post
        request.upload = .bytes(body)
        request.http2Only = true
        request.followRedirects = false
        request.errorStatusIsAnswer = true
        request.keepHeaders = Self.answeredFields
        let passed = fields.filter { !Self.hopFields.contains($0.name) }
        request.headers = passed.map { "\($0.name): \($0.value)" }
        for curlDefault in ["accept", "content-type", "user-agent"] where !passed.contains(where: { $0.name == curlDefault }) {
            request.headers.append("\(curlDefault):")
        }
        let result = try await engine.fetch(request, deadline: .now + timeout)
        return Answer(status: result.status, headers: result.headers, body: try result.body.readAll())
    }

    public func shutdown() {
        engine.shutdown()
    }
}
