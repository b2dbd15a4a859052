import AttacheSupport
import Crypto
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import _CryptoExtras

/// A fake APNs or FCM upstream: a real HTTP/2 server on loopback (clear text with prior knowledge,
/// or TLS with ALPN `h2` and a test CA) that checks what Apple or Google check of a send request
/// and answers in their documented shapes. Tests can make it slow, script its next answers, drop a
/// connection mid-request or send GOAWAY, and read what it accepted.
public final class FakeProvider: Sendable {
    /// What Apple checks: with `providerKey`, the JWT's signature (ES256), key id, team and age;
    /// `clientCertificates`: the connection's certificate was verified instead (then no token is
    /// needed). Tokens in `unregistered` are 410 `Unregistered` with a `timestamp`.
    public struct APNs: Sendable {
        public var providerKey: P256.Signing.PublicKey?
        public var keyID: String
        public var teamID: String
        public var unregistered: Set<String>

        public init(providerKey: P256.Signing.PublicKey? = nil, keyID: String = "", teamID: String = "", unregistered: Set<String> = []) {
            self.providerKey = providerKey
            self.keyID = keyID
            self.teamID = teamID
            self.unregistered = unregistered
        }
    }

    /// What Google checks: with `serviceAccount`, that the bearer is an access token its token
    /// endpoint (`POST /token`) issued for an RS256 assertion signed by that account's key, and
    /// not expired. Tokens in `unregistered` are 404 `UNREGISTERED`.
    public struct FCM: Sendable {
        public var serviceAccount: (email: String, key: _RSA.Signing.PublicKey)?
        public var tokenLifetime: Int
        public var unregistered: Set<String>

        public init(serviceAccount: (email: String, key: _RSA.Signing.PublicKey)? = nil, tokenLifetime: Int = 3599,
                    unregistered: Set<String> = []) {
            self.serviceAccount = serviceAccount
            self.tokenLifetime = tokenLifetime
            self.unregistered = unregistered
        }
    }

    public enum Kind: Sendable {
        case apns(APNs)
        case fcm(FCM)
    }

    /// The server's own certificate and key (PEM files); with `clientCA`, a client must present a
    /// certificate that CA signed.
    public struct TLS: Sendable {
        public var certificatePath: String
        public var keyPath: String
        public var clientCA: String?

        public init(certificatePath: String, keyPath: String, clientCA: String? = nil) {
            self.certificatePath = certificatePath
            self.keyPath = keyPath
            self.clientCA = clientCA
        }
    }

    /// A request the upstream accepted and answered (not one it refused unprocessed).
    public struct Received: Sendable {
        public var path: String
        public var fields: [String: String]
        public var body: [UInt8]
        public var status: Int
        /// Which connection it came on, numbered from 1 in order of arrival.
        public var connection: Int
    }

    /// What the next requests meet, in order, before the rules are applied.
    public enum Fault: Sendable, Equatable {
        /// This status and reason instead of the normal answer (e.g. 429 `TooManyRequests`).
        case answer(status: Int, reason: String)
        /// The connection is closed with the request unanswered.
        case drop
        /// This request is refused unprocessed (REFUSED_STREAM), and GOAWAY names the stream
        /// before it as the last the connection will take.
        case goAway
        /// GOAWAY alone names the stream before this one as the last the connection will take
        /// (0 for a connection's first): RFC 9113 says a stream above it was not processed, and
        /// nothing else says so.
        case goAwayAlone
        /// The normal answer, with this `content-length` field beside it whatever its body is
        /// (the fake's own content-length checks are off, so that it can send such an answer).
        case contentLength(String)
    }

    public let port: Int
    public let scheme: String
    let rules: FakeProviderRules
    private let channel: NIOLockedValueBox<(any Channel)?> = .init(nil)

    public var kind: Kind { rules.kind }
    public var url: String { "\(scheme)://127.0.0.1:\(port)" }
    /// The requests it answered, in order (not those it refused unprocessed or dropped).
    public var received: [Received] { rules.state.withLockedValue { $0.received } }
    /// The connections it sent GOAWAY on.
    public var wentAway: Set<Int> { rules.state.withLockedValue { $0.wentAway } }
    /// Connections accepted so far.
    public var connections: Int { rules.state.withLockedValue { $0.connections } }

    /// Every answer waits this long first.
    public func delay(_ delay: Duration) { rules.state.withLockedValue { $0.delay = delay } }
    /// The next requests meet these, one each.
    public func inject(_ faults: Fault...) { rules.state.withLockedValue { $0.faults += faults } }

    /// `streams`: the streams a connection may carry at once (its SETTINGS_MAX_CONCURRENT_STREAMS).
    public init(_ kind: Kind, tls: TLS? = nil, streams: Int = 100) throws {
        let rules = FakeProviderRules(kind: kind)
        self.rules = rules
        scheme = tls == nil ? "http" : "https"
        let sslContext: NIOSSLContext?
        if let tls {
            var configuration = TLSConfiguration.makeServerConfiguration(
                certificateChain: try NIOSSLCertificate.fromPEMFile(tls.certificatePath).map { .certificate($0) },
                privateKey: .privateKey(try NIOSSLPrivateKey(file: tls.keyPath, format: .pem))
            )
            configuration.applicationProtocols = ["h2"]
            if let ca = tls.clientCA {
                configuration.certificateVerification = .noHostnameVerification
                configuration.trustRoots = .file(ca)
            }
            sslContext = try NIOSSLContext(configuration: configuration)
        } else {
            sslContext = nil
        }
        let bound = try ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let number = rules.state.withLockedValue { $0.connections += 1; return $0.connections }
                    if let sslContext { try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: sslContext)) }
                    var connection = NIOHTTP2Handler.ConnectionConfiguration()
                    connection.initialSettings = [
                        HTTP2Setting(parameter: .maxConcurrentStreams, value: streams),
                        HTTP2Setting(parameter: .maxHeaderListSize, value: HPACKDecoder.defaultMaxHeaderListSize),
                    ]
                    // Off so that `Fault.contentLength` can send an answer whose body is not its
                    // content-length: what the relay must not pass on as an answer. Requests are
                    // still held to theirs, in `FakeProviderStream`.
                    connection.contentLengthValidation = .disabled
                    _ = try channel.pipeline.syncOperations.configureHTTP2Pipeline(
                        mode: .server, connectionConfiguration: connection, streamConfiguration: .init()
                    ) { stream in
                        stream.eventLoop.makeCompletedFuture {
                            try stream.pipeline.syncOperations.addHandler(FakeProviderStream(rules: rules, connection: number))
                        }
                    }
                }
            }
            .bind(host: "127.0.0.1", port: 0).wait()
        port = bound.localAddress?.port ?? 0
        channel.withLockedValue { $0 = bound }
    }

    public func stop() {
        let open = channel.withLockedValue { channel in
            defer { channel = nil }
            return channel
        }
        try? open?.close().wait()
    }

    deinit { stop() }
}

/// What the fake checks and answers, and what it has seen.
final class FakeProviderRules: Sendable {
    typealias Received = FakeProvider.Received
    typealias Fault = FakeProvider.Fault

    struct State {
        var received: [Received] = []
        var faults: [Fault] = []
        var delay: Duration = .zero
        var connections = 0
        var issued: [String: Int64] = [:]
        var lastProviderToken: (token: String, since: Int64)?
        var wentAway: Set<Int> = []
    }

    let kind: FakeProvider.Kind
    let state = NIOLockedValueBox(State())

    init(kind: FakeProvider.Kind) {
        self.kind = kind
    }

    // MARK: Answers

    struct Answer {
        var status: Int
        var fields: [(String, String)] = []
        var body: String = ""
    }

    enum Decision {
        case answer(Answer, after: Duration)
        case drop
        case goAway(reset: Bool)
    }

    func decide(path: String, fields: [String: String], body: [UInt8], connection: Int) -> Decision {
        let (fault, delay) = state.withLockedValue { state in
            (state.faults.isEmpty ? nil : state.faults.removeFirst(), state.delay)
        }
        var answer: Answer
        switch fault {
        case .drop: return .drop
        case .goAway, .goAwayAlone:
            state.withLockedValue { _ = $0.wentAway.insert(connection) }
            return .goAway(reset: fault == .goAway)
        case .answer(let status, let reason): answer = error(status, reason)
        case nil: answer = rules(path: path, fields: fields, body: body)
        case .contentLength(let value):
            answer = rules(path: path, fields: fields, body: body)
            answer.fields.append(("content-length", value))
        }
        if path != "/token" {
            state.withLockedValue {
                $0.received.append(Received(path: path, fields: fields, body: body, status: answer.status, connection: connection))
            }
        }
        if answer.status == 200, case .apns = kind {
            answer.fields.append(("apns-id", fields["apns-id"] ?? UUID().uuidString))
            answer.fields.append(("apns-unique-id", UUID().uuidString.lowercased()))
        }
        return .answer(answer, after: delay)
    }

    /// An error in the provider's shape: Apple's `{"reason"}` (with `timestamp` for 410), Google's
    /// `{"error": {code, message, status, details}}`.
    func error(_ status: Int, _ reason: String) -> Answer {
        switch kind {
        case .apns:
            let timestamp = status == 410 ? #","timestamp":\#(Int64(Date().timeIntervalSince1970 * 1000))"# : ""
            return Answer(status: status, fields: [("content-type", "application/json")], body: #"{"reason":"\#(reason)"\#(timestamp)}"#)
        case .fcm:
            let detail = #"[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"\#(reason)"}]"#
            let status_ = ["UNREGISTERED": "NOT_FOUND", "UNAUTHENTICATED": "UNAUTHENTICATED", "QUOTA_EXCEEDED": "RESOURCE_EXHAUSTED",
                           "UNAVAILABLE": "UNAVAILABLE", "INTERNAL": "INTERNAL"][reason] ?? "INVALID_ARGUMENT"
            return Answer(status: status, fields: [("content-type", "application/json; charset=UTF-8")],
                          body: #"{"error":{"code":\#(status),"message":"\#(reason)","status":"\#(status_)","details":\#(detail)}}"#)
        }
    }

    func rules(path: String, fields: [String: String], body: [UInt8]) -> Answer {
        let now = Int64(Date().timeIntervalSince1970)
        switch kind {
        case .apns(let apns):
            guard fields[":method"] == "POST" else { return error(405, "MethodNotAllowed") }
            guard path.hasPrefix("/3/device/") else { return error(404, "BadPath") }
            let token = String(path.dropFirst("/3/device/".count))
            guard !token.isEmpty, token.allSatisfy(\.isHexDigit) else { return error(400, "BadDeviceToken") }
            if let key = apns.providerKey {
                if let refusal = checkProviderToken(fields["authorization"], key: key, apns: apns, now: now) { return refusal }
                guard fields["apns-topic"] != nil else { return error(400, "MissingTopic") }
            }
            if let priority = fields["apns-priority"], !["1", "5", "10"].contains(priority) { return error(400, "BadPriority") }
            if let collapse = fields["apns-collapse-id"], collapse.utf8.count > 64 { return error(400, "BadCollapseId") }
            if let id = fields["apns-id"], UUID(uuidString: id) == nil { return error(400, "BadMessageId") }
            guard !body.isEmpty else { return error(400, "PayloadEmpty") }
            let limit = fields["apns-push-type"] == "voip" ? 5120 : 4096
            guard body.count <= limit else { return error(413, "PayloadTooLarge") }
            guard (try? JSONSerialization.jsonObject(with: Data(body))) is [String: Any] else { return error(400, "BadPayload") }
            if apns.unregistered.contains(token) { return error(410, "Unregistered") }
            return Answer(status: 200)
        case .fcm(let fcm):
            if path == "/token" { return issueToken(body: body, fcm: fcm, now: now) }
            guard fields[":method"] == "POST" else { return error(405, "INVALID_ARGUMENT") }
            let parts = path.split(separator: "/")
            guard parts.count == 4, parts[0] == "v1", parts[1] == "projects", parts[3].hasSuffix("messages:send") else {
                return error(404, "NOT_FOUND")
            }
            if fcm.serviceAccount != nil {
                let bearer = fields["authorization"].flatMap { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil }
                let expires = bearer.flatMap { token in state.withLockedValue { $0.issued[token] } }
                guard let expires, now < expires else { return error(401, "UNAUTHENTICATED") }
            }
            guard let request = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
                  let message = request["message"] as? [String: Any]
            else { return error(400, "INVALID_ARGUMENT") }
            let targets = ["token", "fid", "topic", "condition"].filter { message[$0] is String }
            guard targets.count == 1 else { return error(400, "INVALID_ARGUMENT") }
            if let token = message["token"] as? String, fcm.unregistered.contains(token) { return error(404, "UNREGISTERED") }
            return Answer(status: 200, fields: [("content-type", "application/json; charset=UTF-8")],
                          body: #"{"name":"projects/\#(parts[2])/messages/0:\#(UInt64.random(in: 1...UInt64.max))"}"#)
        }
    }

    /// Apple's checks of a provider token: present, an ES256 JWT for this key and team, signed by
    /// it, at most an hour old, and not replaced within 20 minutes of the last.
    func checkProviderToken(_ authorization: String?, key: P256.Signing.PublicKey, apns: FakeProvider.APNs, now: Int64) -> Answer? {
        guard let authorization, authorization.lowercased().hasPrefix("bearer ") else { return error(403, "MissingProviderToken") }
        let token = String(authorization.dropFirst("bearer ".count))
        guard let (header, claims, input, signature) = Self.parse(jwt: token),
              header["alg"] as? String == "ES256", header["kid"] as? String == apns.keyID,
              claims["iss"] as? String == apns.teamID, let iat = (claims["iat"] as? NSNumber)?.int64Value,
              let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
              key.isValidSignature(ecdsa, for: input)
        else { return error(403, "InvalidProviderToken") }
        guard now - iat <= 3600 else { return error(403, "ExpiredProviderToken") }
        return state.withLockedValue { state in
            if let last = state.lastProviderToken, last.token != token, now - last.since < 20 * 60 {
                return error(429, "TooManyProviderTokenUpdates")
            }
            if state.lastProviderToken?.token != token { state.lastProviderToken = (token, now) }
            return nil
        }
    }

    /// Google's token endpoint: an RS256 assertion from the service account, for FCM's scope and
    /// this endpoint, buys an access token.
    func issueToken(body: [UInt8], fcm: FakeProvider.FCM, now: Int64) -> Answer {
        let refusal = Answer(status: 400, fields: [("content-type", "application/json")], body: #"{"error":"invalid_grant"}"#)
        let form = Dictionary(String(decoding: body, as: UTF8.self).split(separator: "&").map { pair -> (String, String) in
            let kv = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? String($0) }
            return (kv[0], kv.count > 1 ? kv[1] : "")
        }, uniquingKeysWith: { a, _ in a })
        guard let account = fcm.serviceAccount, form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer",
              let (header, claims, input, signature) = form["assertion"].flatMap(Self.parse(jwt:)),
              header["alg"] as? String == "RS256", claims["iss"] as? String == account.email,
              (claims["scope"] as? String)?.contains("https://www.googleapis.com/auth/firebase.messaging") == true,
              (claims["aud"] as? String)?.hasSuffix("/token") == true,
              let exp = (claims["exp"] as? NSNumber)?.int64Value, exp > now,
              account.key.isValidSignature(_RSA.Signing.RSASignature(rawRepresentation: signature), for: input, padding: .insecurePKCS1v1_5)
        else { return refusal }
        let token = "ya29.fake-" + UUID().uuidString
        state.withLockedValue { $0.issued[token] = now + Int64(fcm.tokenLifetime) }
        return Answer(status: 200, fields: [("content-type", "application/json")],
                      body: #"{"access_token":"\#(token)","expires_in":\#(fcm.tokenLifetime),"token_type":"Bearer"}"#)
    }

    /// Header, claims, signed input and signature of a compact JWT.
    static func parse(jwt: String) -> ([String: Any], [String: Any], [UInt8], [UInt8])? {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let header = Base64.decode(parts[0]), let claims = Base64.decode(parts[1]),
              let signature = Base64.decode(parts[2]),
              let headerObject = try? JSONSerialization.jsonObject(with: Data(header)) as? [String: Any],
              let claimsObject = try? JSONSerialization.jsonObject(with: Data(claims)) as? [String: Any]
        else { return nil }
        return (headerObject, claimsObject, Array("\(parts[0]).\(parts[1])".utf8), signature)
    }
}

/// One request on the fake: gathered whole, then answered as `FakeProvider` decides.
final class FakeProviderStream: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    let rules: FakeProviderRules
    let connection: Int
    private var fields: [String: String] = [:]
    private var body: [UInt8] = []

    init(rules: FakeProviderRules, connection: Int) {
        self.rules = rules
        self.connection = connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .headers(let headers):
            for (name, value, _) in headers.headers { fields[name] = value }
            if headers.endStream { respond(context: context) }
        case .data(let data):
            if case .byteBuffer(let bytes) = data.data { body += Array(buffer: bytes) }
            if data.endStream { respond(context: context) }
        default:
            break
        }
    }

    private func respond(context: ChannelHandlerContext) {
        // The fake's own content-length check is off (`Fault.contentLength`); a provider's is
        // not: a request whose body is not its `content-length` is malformed (RFC 9113 § 8.1.1),
        // reset and never answered, so every test through the fake also checks what the relay sent.
        if let declared = fields["content-length"], Int(declared) != body.count {
            context.writeAndFlush(wrapOutboundOut(.rstStream(.protocolError)), promise: nil)
            return
        }
        let path = fields[":path"] ?? ""
        switch rules.decide(path: path, fields: fields, body: body, connection: connection) {
        case .drop:
            context.channel.parent?.close(promise: nil)
        case .goAway(let reset):
            let streamID = (try? context.channel.syncOptions?.getOption(HTTP2StreamChannelOptions.streamID)) ?? .rootStream
            let last = HTTP2StreamID(max(0, Int(Int32(streamID)) - 2))
            // With `reset`, this stream is refused outright too (REFUSED_STREAM: not processed,
            // safe to retry) before the connection goes away.
            if reset { context.writeAndFlush(wrapOutboundOut(.rstStream(.refusedStream)), promise: nil) }
            context.channel.parent?.writeAndFlush(HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: last, errorCode: .noError, opaqueData: nil)),
                                                  promise: nil)
        case .answer(let answer, let delay):
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            if delay > .zero {
                context.eventLoop.scheduleTask(in: .nanoseconds(delay.nanoseconds)) {
                    let (handler, context) = loopBound.value
                    handler.write(answer, context: context)
                }
            } else {
                write(answer, context: context)
            }
        }
    }

    private func write(_ answer: FakeProviderRules.Answer, context: ChannelHandlerContext) {
        var headers = HPACKHeaders([(":status", String(answer.status))])
        for (name, value) in answer.fields { headers.add(name: name, value: value) }
        let body = answer.body
        context.write(wrapOutboundOut(.headers(.init(headers: headers, endStream: body.isEmpty))), promise: nil)
        if !body.isEmpty { context.write(wrapOutboundOut(.data(.init(data: .byteBuffer(ByteBuffer(string: body)), endStream: true))), promise: nil) }
        context.flush()
    }
}
