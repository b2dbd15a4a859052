import NIOCore
import NIOSSL

/// Sends a request on to Apple or Google and brings back what they answered, over HTTP/2 on a few
/// long-lived connections per upstream (`UpstreamConnections`). The upstreams are configured, not
/// named by a request: no address policy applies.
public struct Forwarder: Sendable {
    /// What the upstream answered.
    public struct Answer: Sendable {
        public var status: Int
        /// The response fields a client of Apple's or Google's reads (`apns-id`, …).
        public var headers: [HeaderField]
        public var body: ByteBuffer
    }

    /// How an exchange's end comes back: called once, with the answer or why there is none, on
    /// the upstream connection's loop. A closure, not a promise per layer: a future of a generic
    /// type costs the runtime a metadata lookup as it is made and another as it is freed, about a
    /// thousand instructions each, and a promise per layer made four per passthrough.
    typealias Reply = @Sendable (Result<Answer, any Error>) -> Void

    /// The response fields passed back to the client.
    static let answeredFields = FieldNames(["apns-id", "apns-unique-id", "content-type", "retry-after"])
    /// As many as `answeredFields` names: room for an answer's, kept once.
    static let answeredFieldCount = 4
    /// Request fields that belong to one hop, or to HTTP/2's own framing, or to the relay.
    static let hopFields = FieldNames([
        "host", "content-length", "connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "upgrade",
        "expect", "attache-deadline-ms",
    ])

    let apns: UpstreamConnections
    let fcm: UpstreamConnections

    /// Connections to `configuration`'s upstreams, trusting its `upstreamCA` when given and
    /// presenting its APNs client certificate to Apple when given. Nothing is opened until the
    /// first request.
    public init(configuration: RelayConfiguration) throws {
        let tls = TLSConfiguration.upstream(caFile: configuration.upstreamCA)
        var apnsTLS = tls
        if let identity = configuration.apnsCertificate {
            let (chain, key) = try identity.load(certificateOption: "--apns-certificate", keyOption: "--apns-certificate-key")
            apnsTLS.certificateChain = chain.map { .certificate($0) }
            apnsTLS.privateKey = .privateKey(key)
        }
        func origin(_ url: String) throws -> UpstreamConnections.Origin {
            guard let origin = UpstreamConnections.Origin(url: url) else { throw RelayConfiguration.InvalidUpstream(url: url) }
            return origin
        }
        apns = try UpstreamConnections(origin: try origin(configuration.apnsUpstream), tls: apnsTLS, perLoop: Self.connectionsPerLoop)
        fcm = try UpstreamConnections(origin: try origin(configuration.fcmUpstream), tls: tls, perLoop: Self.connectionsPerLoop)
    }

    /// The most connections each event loop opens to an upstream: with Apple's 1,000 streams per
    /// connection one is enough; an upstream that allows 100 (nghttpd, many proxies) needs several
    /// for the thousands of requests a busy relay has in flight.
    static let connectionsPerLoop = 8

    /// `fields` are the client's request fields (lower-case names), passed on but for the hop's
    /// own, its `authorization` replaced by `authorization` when there is one (the relay's own
    /// credential), and `via` added: the upstream sees what the client sent. `loop`: the
    /// client's, whose connections to the upstream carry it. The answer's fields are those of
    /// `answeredFields` (`Exchanges` keeps no other).
    func forward(_ provider: Provider, path: String, fields: [HeaderField], authorization: String?, via: String, body: ByteBuffer,
                 timeout: Duration, on loop: any EventLoop, reply: @escaping Reply) {
        let upstream = provider == .apns ? apns : fcm
        // One array, made once at its size (a copy of the client's, grown, then filtered, made three).
        var sent: [HeaderField] = []
        sent.reserveCapacity(fields.count + 2)
        for field in fields where !Self.hopFields.contains(field.name) && (authorization == nil || field.name != "authorization") {
            sent.append(field)
        }
        if let authorization { sent.append(HeaderField(name: "authorization", value: authorization)) }
        sent.append(HeaderField(name: "via", value: via))
        let exchange = UpstreamConnections.Exchange(path: upstream.origin.pathPrefix + path, fields: sent, body: body)
        upstream.send(exchange, deadline: .now() + .nanoseconds(Int64(timeout.nanoseconds)), on: loop, reply: reply)
    }

    public func shutdown() {
        apns.shutdown()
        fcm.shutdown()
    }
}

extension TLSConfiguration {
    /// A client's TLS for an upstream: the system's authorities, or `caFile`'s instead.
    static func upstream(caFile: String?) -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile { tls.trustRoots = .file(caFile) }
        return tls
    }
}
