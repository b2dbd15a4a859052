import AttacheFetch
import AttacheSupport
import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL

/// Why a request did not get an answer from the upstream. `unsent` means the upstream is known
/// not to have acted on it — the connection could not be made, or the upstream refused the stream
/// (`REFUSED_STREAM`, or a stream above a GOAWAY's last id) — so sending it again cannot make a
/// duplicate notification; anything else may have been delivered and is not retried.
public enum UpstreamError: Error, Sendable, CustomStringConvertible {
    case unsent(String)
    case noAnswer(String)
    case timedOut
    case answerTooLarge

    public var description: String {
        switch self {
        case .unsent(let why): "not sent: \(why)"
        case .noAnswer(let why): "no answer: \(why)"
        case .timedOut: "the upstream did not answer in time"
        case .answerTooLarge: "the upstream's answer is larger than 1 MB"
        }
    }
}

/// One upstream origin (scheme, host, port) over HTTP/2: a few long-lived connections, each
/// carrying many concurrent streams, opened on first use and replaced when the upstream closes
/// one or sends GOAWAY — as Apple asks of providers ("keep your connections with APNs open
/// across multiple notifications"). Streams beyond the peer's `SETTINGS_MAX_CONCURRENT_STREAMS`
/// wait in the HTTP/2 handler's buffer. Everything runs on NIO's event loops: no thread hop and no
/// copy between the server side and this one.
final class UpstreamConnections: Sendable {
    struct Origin: Hashable, Sendable {
        var tls: Bool
        var host: String
        var port: Int
        /// The `:authority` of a request: the host, and the port when it is not the scheme's.
        var authority: String
        /// The URL's path without its trailing slash, put before each request's path ("" for none).
        var pathPrefix: String

        /// `https://api.push.apple.com`, `http://127.0.0.1:8080/…`: scheme, host, port and path.
        init?(url: String) {
            let tls: Bool
            let rest: Substring
            if url.hasPrefix("https://") {
                tls = true
                rest = url.dropFirst("https://".count)
            } else if url.hasPrefix("http://") {
                tls = false
                rest = url.dropFirst("http://".count)
            } else {
                return nil
            }
            let authority = rest.prefix { $0 != "/" }
            var host = Substring(authority)
            var port = tls ? 443 : 80
            if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
                host = authority[authority.index(after: authority.startIndex)..<close]
                let after = authority[authority.index(after: close)...]
                if after.hasPrefix(":") {
                    guard let parsed = Int(after.dropFirst()) else { return nil }
                    port = parsed
                }
            } else if let colon = authority.lastIndex(of: ":") {
                guard let parsed = Int(authority[authority.index(after: colon)...]) else { return nil }
                port = parsed
                host = authority[..<colon]
            }
            guard !host.isEmpty, (1...65535).contains(port) else { return nil }
            self.tls = tls
            self.host = String(host)
            self.port = port
            let shown = host.contains(":") ? "[\(host)]" : String(host)
            self.authority = port == (tls ? 443 : 80) ? shown : "\(shown):\(port)"
            pathPrefix = String(rest.dropFirst(authority.count)).withoutTrailingSlash
        }
    }

    /// A request as the relay forwards it.
    struct Exchange: Sendable {
        var path: String
        var fields: [(name: String, value: String)]
        var body: ByteBuffer
    }

    let origin: Origin
    private let sslContext: NIOSSLContext?
    private let group: any EventLoopGroup

    private enum Slot {
        case empty
        case connecting(attempt: Int, EventLoopFuture<Connection>)
        case open(Connection)
    }

    private struct State {
        var slots: [Slot]
        var next = 0
        var attempts = 0
    }

    private let state: NIOLockedValueBox<State>

    /// `tls`: how to reach an `https` origin (trust, a client certificate); ALPN is set to `h2`.
    init(origin: Origin, tls: TLSConfiguration, connections: Int, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) throws {
        self.origin = origin
        self.group = group
        var tls = tls
        tls.applicationProtocols = ["h2"]
        sslContext = origin.tls ? try NIOSSLContext(configuration: tls) : nil
        state = NIOLockedValueBox(State(slots: Array(repeating: .empty, count: max(1, connections))))
    }

    /// Sends one request and returns the upstream's answer. A request the upstream certainly did
    /// not act on is sent again, on another connection, up to twice.
    func send(_ exchange: Exchange, deadline: NIODeadline, attempt: Int = 0) -> EventLoopFuture<Forwarder.Answer> {
        nextConnection()
            .flatMap { $0.send(exchange, origin: self.origin, deadline: deadline) }
            .flatMapError { error in
                guard case UpstreamError.unsent = error, attempt < 2, NIODeadline.now() < deadline else {
                    return self.group.any().makeFailedFuture(error)
                }
                return self.send(exchange, deadline: deadline, attempt: attempt + 1)
            }
    }

    /// The connections take turns. A slot whose connection closed or is going away gets a new one.
    private func nextConnection() -> EventLoopFuture<Connection> {
        enum Choice {
            case ready(Connection)
            case wait(EventLoopFuture<Connection>)
            case started(slot: Int, attempt: Int, EventLoopFuture<Connection>)
        }
        let choice = state.withLockedValue { state -> Choice in
            let slot = state.next % state.slots.count
            state.next &+= 1
            switch state.slots[slot] {
            case .open(let connection) where connection.isUsable:
                return .ready(connection)
            case .connecting(_, let future):
                return .wait(future)
            case .empty, .open:
                state.attempts += 1
                let future = connect()
                state.slots[slot] = .connecting(attempt: state.attempts, future)
                return .started(slot: slot, attempt: state.attempts, future)
            }
        }
        switch choice {
        case .ready(let connection):
            return connection.channel.eventLoop.makeSucceededFuture(connection)
        case .wait(let future):
            return future
        case .started(let slot, let attempt, let future):
            // Registered outside the lock: a connect that failed at once completes the future here.
            future.whenComplete { result in
                self.state.withLockedValue { state in
                    guard case .connecting(let current, _) = state.slots[slot], current == attempt else { return }
                    if case .success(let connection) = result {
                        state.slots[slot] = .open(connection)
                    } else {
                        state.slots[slot] = .empty
                    }
                }
            }
            return future
        }
    }

    /// The requests sent were validated as they arrived from clients, and what the upstream
    /// answers goes back to them through the relay's own validating HTTP/2: checked once each way.
    static let http2 = {
        var configuration = NIOHTTP2Handler.ConnectionConfiguration()
        configuration.headerBlockValidation = .disabled
        return configuration
    }()

    private func connect() -> EventLoopFuture<Connection> {
        let sslContext = sslContext
        let origin = origin
        let watcher = GoAwayWatcher()
        // HTTP/2 goes into the pipeline before the connection opens: the upstream's SETTINGS can
        // arrive before the connect's future completes (happy eyeballs settles it a tick later),
        // and bytes read with no HTTP/2 handler to take them are lost, leaving the frame decoder
        // misaligned and every stream on that connection unanswered.
        return ClientBootstrap(group: group)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connectTimeout(.seconds(10))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    if let sslContext {
                        // SNI takes a name, not an address literal.
                        let name = IPAddress(origin.host) == nil ? origin.host : nil
                        try sync.addHandler(try NIOSSLClientHandler(context: sslContext, serverHostname: name))
                    }
                    try sync.addHandler(FlushCoalescer())
                    _ = try sync.configureHTTP2Pipeline(mode: .client, connectionConfiguration: Self.http2, streamConfiguration: .init()) { stream in
                        stream.close()
                    }
                    try sync.addHandler(watcher)
                }
            }
            .connect(host: origin.host, port: origin.port)
            .flatMap { channel in
                channel.eventLoop.makeCompletedFuture {
                    let multiplexer = try channel.pipeline.syncOperations.handler(type: NIOHTTP2Handler.self).syncMultiplexer()
                    return Connection(channel: channel, multiplexer: multiplexer, watcher: watcher)
                }
            }
            .flatMapErrorThrowing { error in throw UpstreamError.unsent("\(origin.authority): \(error)") }
    }

    func shutdown() {
        let slots = state.withLockedValue { state in
            defer { state.slots = state.slots.map { _ in .empty } }
            return state.slots
        }
        for slot in slots {
            switch slot {
            case .open(let connection): connection.channel.close(promise: nil)
            case .connecting(_, let future): future.whenSuccess { $0.channel.close(promise: nil) }
            case .empty: break
            }
        }
    }
}

/// One HTTP/2 connection to the upstream.
final class Connection: Sendable {
    let channel: any Channel
    let multiplexer: NIOHTTP2Handler.StreamMultiplexer
    let watcher: GoAwayWatcher

    init(channel: any Channel, multiplexer: NIOHTTP2Handler.StreamMultiplexer, watcher: GoAwayWatcher) {
        self.channel = channel
        self.multiplexer = multiplexer
        self.watcher = watcher
    }

    /// Open, and the upstream has not asked for new streams to go elsewhere.
    var isUsable: Bool { channel.isActive && !watcher.goingAway }

    func send(_ exchange: Exchange, origin: UpstreamConnections.Origin, deadline: NIODeadline) -> EventLoopFuture<Forwarder.Answer> {
        let loop = channel.eventLoop
        let answer = loop.makePromise(of: Forwarder.Answer.self)
        var head = HPACKHeaders()
        head.reserveCapacity(exchange.fields.count + 5)
        head.add(name: ":method", value: "POST")
        head.add(name: ":scheme", value: origin.tls ? "https" : "http")
        head.add(name: ":authority", value: origin.authority)
        head.add(name: ":path", value: exchange.path)
        for (name, value) in exchange.fields { head.add(name: name, value: value) }
        head.add(name: "content-length", value: String(exchange.body.readableBytes))
        // The multiplexer is the connection's event loop's alone: a stream made from another
        // thread races with the loop's own bookkeeping (seen as streams that never opened).
        let (multiplexer, watcher, body) = (multiplexer, watcher, exchange.body)
        let open: @Sendable () -> Void = { [head] in
            let created = loop.makePromise(of: (any Channel).self)
            created.futureResult.whenFailure { error in answer.fail(UpstreamError.unsent("\(error)")) }
            multiplexer.createStreamChannel(promise: created) { stream in
                stream.eventLoop.makeCompletedFuture {
                    try stream.pipeline.syncOperations.addHandler(
                        ExchangeHandler(head: head, body: body, answer: answer, deadline: deadline, goAway: watcher)
                    )
                }
            }
        }
        if loop.inEventLoop { open() } else { loop.execute(open) }
        return answer.futureResult
    }

    typealias Exchange = UpstreamConnections.Exchange
}

/// Notes a GOAWAY from the upstream, so that new requests open a new connection while the
/// streams in flight on this one finish.
final class GoAwayWatcher: ChannelInboundHandler, Sendable {
    typealias InboundIn = HTTP2Frame
    /// The lowest last stream id of the GOAWAYs received; nil before the first.
    private let lastStreamID = NIOLockedValueBox<HTTP2StreamID?>(nil)

    var goingAway: Bool { lastStreamID.withLockedValue { $0 != nil } }

    /// Whether a GOAWAY said `stream` was not processed (RFC 9113 §6.8: streams above its last
    /// id were not acted on, and may be sent again on another connection). NIO then closes such a
    /// stream with CANCEL, which by itself promises nothing. The frame reaches this handler
    /// before NIO closes the streams it drops.
    func refused(_ stream: HTTP2StreamID) -> Bool {
        lastStreamID.withLockedValue { last in last.map { stream > $0 } ?? false }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .goAway(let last, _, _) = unwrapInboundIn(data).payload {
            lastStreamID.withLockedValue { $0 = min($0 ?? last, last) }
        }
        context.fireChannelRead(data)
    }
}

/// One request on its own stream: sends the head and body when the stream opens, gathers the
/// answer, and ends it with an error the caller can act on.
final class ExchangeHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    private let head: HPACKHeaders
    private let body: ByteBuffer
    private let answer: EventLoopPromise<Forwarder.Answer>
    private let deadline: NIODeadline
    private var status: Int?
    private var fields: [(name: String, value: String)] = []
    private var received = ByteBuffer()
    private var written = false
    private var done = false
    private var timeout: Scheduled<Void>?

    private let goAway: GoAwayWatcher

    init(head: HPACKHeaders, body: ByteBuffer, answer: EventLoopPromise<Forwarder.Answer>, deadline: NIODeadline,
         goAway: GoAwayWatcher) {
        self.goAway = goAway
        self.head = head
        self.body = body
        self.answer = answer
        self.deadline = deadline
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timeout = context.eventLoop.scheduleTask(deadline: deadline) {
            let (handler, context) = loopBound.value
            handler.finish(.failure(UpstreamError.timedOut))
            context.close(promise: nil)
        }
        if context.channel.isActive { write(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        write(context: context)
        context.fireChannelActive()
    }

    private func write(context: ChannelHandlerContext) {
        guard !written else { return }
        written = true
        let empty = body.readableBytes == 0
        context.write(wrapOutboundOut(.headers(.init(headers: head, endStream: empty))), promise: nil)
        if !empty { context.write(wrapOutboundOut(.data(.init(data: .byteBuffer(body), endStream: true))), promise: nil) }
        context.flush()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .headers(let headers):
            if status == nil, let code = headers.headers.first(name: ":status").flatMap(Int.init), code >= 200 {
                status = code
                for (name, value, _) in headers.headers where !name.hasPrefix(":") {
                    fields.append((name: name, value: value))
                }
            }
            if headers.endStream { complete() }
        case .data(let data):
            if case .byteBuffer(var bytes) = data.data {
                guard received.readableBytes + bytes.readableBytes <= 1 << 20 else {
                    finish(.failure(UpstreamError.answerTooLarge))
                    context.close(promise: nil)
                    return
                }
                received.writeBuffer(&bytes)
            }
            if data.endStream { complete() }
        case .rstStream(let code):
            finish(.failure(code == .refusedStream ? UpstreamError.unsent("stream refused") : UpstreamError.noAnswer("stream reset: \(code)")))
        default:
            break
        }
    }

    private func complete() {
        guard let status else {
            finish(.failure(UpstreamError.noAnswer("the stream ended without a status")))
            return
        }
        finish(.success(Forwarder.Answer(status: status, headers: fields, body: received)))
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let closed = error as? NIOHTTP2Errors.StreamClosed, closed.errorCode == .refusedStream || goAway.refused(closed.streamID) {
            finish(.failure(UpstreamError.unsent("refused (GOAWAY)")))
        } else {
            finish(.failure(UpstreamError.noAnswer("\(error)")))
        }
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish(.failure(written ? UpstreamError.noAnswer("the stream closed") : UpstreamError.unsent("the stream closed before it was opened")))
        context.fireChannelInactive()
    }

    private func finish(_ result: Result<Forwarder.Answer, any Error>) {
        guard !done else { return }
        done = true
        timeout?.cancel()
        answer.completeWith(result)
    }
}
