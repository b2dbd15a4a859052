import AttacheFetch
import AttacheSupport
import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import Synchronization

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

/// One upstream origin (scheme, host, port) over HTTP/2: long-lived connections, each carrying
/// many concurrent streams, opened on first use and replaced when the upstream closes one or sends
/// GOAWAY — as Apple asks of providers ("keep your connections with APNs open across multiple
/// notifications").
///
/// Each event loop has connections of its own, and a request goes out on one of its caller's
/// loop: the client's stream and the upstream's are served by one thread, with no hop between
/// threads either way (as each of nghttpx's workers keeps its own backend connections). A loop
/// opens another connection when every one it has carries as many streams as the upstream allows
/// (its `SETTINGS_MAX_CONCURRENT_STREAMS`), up to `perLoop`; past that, streams wait in the HTTP/2
/// handler's buffer of the least busy one. Waiting there is what made a relay slower at 100
/// streams per client than at 32: NIO's buffer and stream tables are searched linearly, per frame.
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

    /// A request as the relay forwards it. A class: it is handed down through a retry, a pool
    /// and a connection's pending streams, and a struct of three references was copied at each
    /// (eight times a request).
    final class Exchange: Sendable {
        let path: String
        let fields: [HeaderField]
        let body: ByteBuffer

        init(path: String, fields: [HeaderField], body: ByteBuffer) {
            self.path = path
            self.fields = fields
            self.body = body
        }
    }

    let origin: Origin
    private let sslContext: NIOSSLContext?
    private let group: any EventLoopGroup

    /// One event loop's connections.
    private struct Pool {
        var open: [Connection] = []
        /// The connection being opened, if one is (one at a time per loop).
        var connecting: (attempt: Int, future: EventLoopFuture<Connection>)?

        /// The least busy connection, once those closed or going away are dropped (no new stream
        /// goes there; those in flight finish); and the one being opened.
        mutating func leastBusy() -> (best: Connection?, connecting: EventLoopFuture<Connection>?) {
            var best: Connection?
            var unusable = false
            for connection in open {
                guard connection.isUsable else {
                    unusable = true
                    continue
                }
                if best.map({ connection.load.inFlight < $0.load.inFlight }) ?? true { best = connection }
            }
            if unusable { open.removeAll { !$0.isUsable } }
            return (best, connecting?.future)
        }
    }

    private struct State {
        /// By event loop.
        var pools: [ObjectIdentifier: Pool] = [:]
        var attempts = 0
    }

    private let state = NIOLockedValueBox(State())
    /// The most connections each event loop opens to this origin.
    let perLoop: Int

    /// `tls`: how to reach an `https` origin (trust, a client certificate); ALPN is set to `h2`.
    init(origin: Origin, tls: TLSConfiguration, perLoop: Int, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) throws {
        self.origin = origin
        self.group = group
        self.perLoop = max(1, perLoop)
        var tls = tls
        tls.applicationProtocols = ["h2"]
        sslContext = origin.tls ? try NIOSSLContext(configuration: tls) : nil
    }

    /// Sends one request and returns the upstream's answer, on `loop` (the caller's, or any when
    /// it has none): what an exchange that is not on the forwarding path awaits.
    func send(_ exchange: Exchange, deadline: NIODeadline, on loop: (any EventLoop)? = nil) -> EventLoopFuture<Forwarder.Answer> {
        let loop = loop ?? MultiThreadedEventLoopGroup.currentEventLoop ?? group.next()
        let answer = loop.makePromise(of: Forwarder.Answer.self)
        send(exchange, deadline: deadline, on: loop, reply: answer.completeWith)
        return answer.futureResult
    }

    /// Sends one request on a connection of `loop`'s; `reply` gets the upstream's answer. A
    /// request the upstream certainly did not act on is sent again, on another connection, up to
    /// twice. Each attempt goes on a connection ready now with no future in between (a
    /// passthrough's usual case), or once one opens.
    func send(_ exchange: Exchange, deadline: NIODeadline, on loop: any EventLoop, attempt: Int = 0, reply: @escaping Forwarder.Reply) {
        let retrying: Forwarder.Reply = { result in
            guard case .failure(let error) = result, case UpstreamError.unsent = error, attempt < 2, NIODeadline.now() < deadline else {
                reply(result)
                return
            }
            self.send(exchange, deadline: deadline, on: loop, attempt: attempt + 1, reply: reply)
        }
        switch nextConnection(for: loop) {
        case .ready(let connection):
            connection.send(exchange, origin: origin, deadline: deadline, reply: retrying)
        case .wait(let connecting):
            connecting.whenComplete { opened in
                switch opened {
                case .success(let connection): connection.send(exchange, origin: self.origin, deadline: deadline, reply: retrying)
                case .failure(let error): retrying(.failure(error))
                }
            }
        }
    }

    private enum Choice {
        case ready(Connection)
        case wait(EventLoopFuture<Connection>)
    }

    /// A connection of `loop` (the client's, or the caller's): the least busy one, and
    /// another opened beside it when that one is full, which the requests after wait for. A loop
    /// with none yet borrows another loop's while its own opens; with none anywhere, the request
    /// waits for the connect.
    private func nextConnection(for loop: any EventLoop) -> Choice {
        let key = ObjectIdentifier(loop)
        var started: (attempt: Int, future: EventLoopFuture<Connection>)?
        let choice = state.withLockedValue { state -> Choice in
            // The loop's pool is changed where it is: copied out of the dictionary and written
            // back, its list of connections was copied for every request.
            var (best, opening) = state.pools[key, default: Pool()].leastBusy()
            if best.map({ $0.load.isFull }) ?? true, opening == nil, state.pools[key]!.open.count < perLoop {
                state.attempts += 1
                let attempt = (state.attempts, connect(on: loop))
                state.pools[key]!.connecting = attempt
                started = attempt
                opening = attempt.1
            }
            // A full connection takes more only when no other is opening: a burst waits for the
            // new one rather than queueing behind the streams of the old.
            if let best, !best.load.isFull || opening == nil { return .ready(best) }
            if best == nil, let elsewhere = state.pools.values.lazy.flatMap(\.open).first(where: { $0.isUsable && !$0.load.isFull }) {
                return .ready(elsewhere)
            }
            return .wait(opening!)
        }
        if let (attempt, future) = started {
            // Registered outside the lock: a connect that failed at once completes the future here.
            future.whenComplete { result in
                self.state.withLockedValue { state in
                    guard state.pools[key]?.connecting?.attempt == attempt else { return }
                    state.pools[key]?.connecting = nil
                    if case .success(let connection) = result { state.pools[key]?.open.append(connection) }
                }
            }
        }
        return choice
    }

    /// The requests sent were validated as they arrived from clients, and what the upstream
    /// answers is checked by the forwarder before it goes back, its body against its
    /// `content-length` by `Exchanges`: checked once each way.
    static let http2 = {
        var configuration = NIOHTTP2Handler.ConnectionConfiguration()
        configuration.headerBlockValidation = .disabled
        configuration.contentLengthValidation = .disabled
        return configuration
    }()

    private func connect(on loop: any EventLoop) -> EventLoopFuture<Connection> {
        let sslContext = sslContext
        let origin = origin
        // HTTP/2 goes into the pipeline before the connection opens: the upstream's SETTINGS can
        // arrive before the connect's future completes (happy eyeballs settles it a tick later),
        // and bytes read with no HTTP/2 handler to take them are lost, leaving the frame decoder
        // misaligned and every stream on that connection unanswered.
        return ClientBootstrap(group: loop)
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
                    // Frames go to and come from `Exchanges` itself: no stream channel per request.
                    try sync.addHandlers([FlushCoalescer(), NIOHTTP2Handler(mode: .client, connectionConfiguration: Self.http2), Exchanges()])
                }
            }
            .connect(host: origin.host, port: origin.port)
            .flatMap { channel in
                // Usable once HTTP/2 has seen the connection open and sent its preface: NIO
                // completes the connect before it tells the pipeline.
                channel.eventLoop.makeCompletedFuture {
                    let exchanges = try channel.pipeline.syncOperations.handler(type: Exchanges.self)
                    let connection = Connection(channel: channel, exchanges: NIOLoopBound(exchanges, eventLoop: channel.eventLoop),
                                                load: exchanges.load)
                    return (exchanges.active.futureResult, connection)
                }
                .flatMap { active, connection in active.map { @Sendable in connection } }
            }
            .flatMapErrorThrowing { error in throw UpstreamError.unsent("\(origin.authority): \(error)") }
    }

    func shutdown() {
        let pools = state.withLockedValue { state in
            defer { state.pools = [:] }
            return state.pools.values
        }
        for pool in pools {
            for connection in pool.open { connection.channel.close(promise: nil) }
            pool.connecting?.future.whenSuccess { $0.channel.close(promise: nil) }
        }
    }
}

/// One HTTP/2 connection to the upstream.
final class Connection: Sendable {
    let channel: any Channel
    let exchanges: NIOLoopBound<Exchanges>
    /// Written on the connection's loop, read by whoever picks a connection.
    let load: Load

    init(channel: any Channel, exchanges: NIOLoopBound<Exchanges>, load: Load) {
        self.channel = channel
        self.exchanges = exchanges
        self.load = load
    }

    /// Open, and the upstream has not asked for new streams to go elsewhere.
    var isUsable: Bool { channel.isActive && !load.goingAway }

    /// Sends one request on this connection; `reply` is called on its loop.
    func send(_ exchange: UpstreamConnections.Exchange, origin: UpstreamConnections.Origin, deadline: NIODeadline,
              reply: @escaping Forwarder.Reply) {
        let loop = channel.eventLoop
        // Made from pairs, not with `HPACKHeaders.add`, which checks that each name is ASCII
        // byte by byte through a closure (about 300 instructions a field): the client's fields
        // were checked as the request was read (`RelayRequest(validating:)`).
        var pairs: [(String, String)] = []
        pairs.reserveCapacity(exchange.fields.count + 5)
        pairs.append((":method", "POST"))
        pairs.append((":scheme", origin.tls ? "https" : "http"))
        pairs.append((":authority", origin.authority))
        pairs.append((":path", exchange.path))
        for field in exchange.fields { pairs.append((field.name, field.value)) }
        pairs.append(("content-length", String(exchange.body.readableBytes)))
        let head = HPACKHeaders(pairs)
        let (exchanges, body) = (exchanges, exchange.body)
        let send: @Sendable () -> Void = { [head] in exchanges.value.send(head: head, body: body, reply: reply, deadline: deadline) }
        if loop.inEventLoop { send() } else { loop.execute(send) }
    }
}

/// What a connection carries and may carry, and whether the upstream sent GOAWAY on it: kept by
/// its `Exchanges`, readable from any thread.
final class Load: Sendable {
    private let streams = Atomic<Int>(0)
    /// The upstream's `SETTINGS_MAX_CONCURRENT_STREAMS`; 100 until it says (RFC 9113 suggests
    /// no less), and when it names none.
    private let allowed = Atomic<Int>(100)
    private let closing = Atomic<Bool>(false)

    /// Requests sent and not yet answered.
    var inFlight: Int { streams.load(ordering: .relaxed) }
    /// As many streams as the upstream allows at once: another request would wait in NIO's buffer.
    var isFull: Bool { streams.load(ordering: .relaxed) >= allowed.load(ordering: .relaxed) }
    var goingAway: Bool { closing.load(ordering: .relaxed) }

    func carrying(_ count: Int) { streams.store(count, ordering: .relaxed) }
    func allow(_ count: Int) { allowed.store(count, ordering: .relaxed) }
    func closingNow() { closing.store(true, ordering: .relaxed) }
}

/// The requests in flight on one upstream connection, in HTTP/2's own frames: each request is a
/// HEADERS and a DATA frame on a stream id of its own, each answer gathered from the frames that
/// come back for that id, and each ends with an error the caller can act on — `unsent` for a stream
/// the upstream refused (`REFUSED_STREAM`, or above a GOAWAY's last id: RFC 9113 §6.8), which may
/// go again on another connection without a duplicate notification. NIO's HTTP/2 handler keeps
/// the protocol's state (HPACK, stream states, outbound flow control, streams past the peer's
/// concurrency limit held back); this handler gives back the upstream's inbound window itself,
/// which NIO's stream channels would otherwise do, one channel per request.
final class Exchanges: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private struct Pending {
        let reply: Forwarder.Reply
        var status: Int?
        var fields: [HeaderField] = []
        /// The answer's `content-length`, which its body must be.
        var declaredLength: Int?
        var body = ByteBuffer()
        /// The stream's inbound window, used by the answer.
        var window = InboundWindow()
    }

    let load = Load()
    private var context: ChannelHandlerContext?
    private var pending: [HTTP2StreamID: Pending] = [:] {
        didSet { load.carrying(pending.count) }
    }
    private var nextStreamID: Int32 = 1
    /// The lowest last stream id of the GOAWAYs received.
    private var lastStreamID: HTTP2StreamID?
    /// Deadlines in the order the requests were sent (one timeout per upstream, so in order), and
    /// the one timer for the earliest.
    private var deadlines = CircularBuffer<(deadline: NIODeadline, stream: HTTP2StreamID)>()
    private var timer: Scheduled<Void>?
    /// The connection's inbound window.
    private var window = InboundWindow()

    /// Succeeded when the connection is open and HTTP/2's preface sent.
    private(set) var active: EventLoopPromise<Void>!

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        active = context.eventLoop.makePromise()
        if context.channel.isActive { active.succeed() }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        active.fail(ChannelError.ioOnClosedChannel)
        failAll(UpstreamError.noAnswer("the connection closed"))
    }

    func channelActive(context: ChannelHandlerContext) {
        active.succeed()
        context.fireChannelActive()
    }

    /// Sends a request on a new stream (on the connection's loop).
    func send(head: HPACKHeaders, body: ByteBuffer, reply: @escaping Forwarder.Reply, deadline: NIODeadline) {
        guard let context, context.channel.isActive, lastStreamID == nil, nextStreamID < Int32.max - 2 else {
            load.closingNow()
            reply(.failure(UpstreamError.unsent("the connection is closing")))
            return
        }
        let stream = HTTP2StreamID(nextStreamID)
        nextStreamID += 2
        pending[stream] = Pending(reply: reply)
        let empty = body.readableBytes == 0
        let written = context.eventLoop.makePromise(of: Void.self)
        // A stream NIO cannot open (the connection closing under it) was never sent.
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        written.futureResult.whenFailure { error in bound.value.fail(stream, UpstreamError.unsent("\(error)")) }
        context.write(wrapOutboundOut(HTTP2Frame(streamID: stream, payload: .headers(.init(headers: head, endStream: empty)))), promise: written)
        if !empty { context.write(wrapOutboundOut(HTTP2Frame(streamID: stream, payload: .data(.init(data: .byteBuffer(body), endStream: true)))), promise: nil) }
        context.flush()
        deadlines.append((deadline, stream))
        if timer == nil { armTimer(context) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .headers(let headers):
            guard var exchange = pending[frame.streamID] else { return }
            if exchange.status == nil, let code = headers.headers.first(name: ":status").flatMap(Int.init), code >= 200 {
                exchange.status = code
                exchange.fields.reserveCapacity(Forwarder.answeredFieldCount)
                for (name, value, _) in headers.headers where !name.hasPrefix(":") {
                    if name.utf8.count == 14, name == "content-length" {
                        // Digits alone, and a repeated field the same: anything else is a
                        // malformed answer (RFC 9113 § 8.1.1), a stream error, as NIO's check
                        // (off on this connection) would make it.
                        guard let length = RelayRequest.length(value), exchange.declaredLength.map({ $0 == length }) ?? true else {
                            fail(frame.streamID, UpstreamError.noAnswer("the answer's content-length is not one length"))
                            context.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: frame.streamID, payload: .rstStream(.protocolError))), promise: nil)
                            return
                        }
                        exchange.declaredLength = length
                    }
                    // Only the fields a client is given back are kept. Neither side's HTTP/2
                    // validates header blocks (the clients' are checked as they are read): a value
                    // the client could not take (NUL, CR, LF) is left out.
                    guard Forwarder.answeredFields.contains(name), RelayRequest.isValue(value) else { continue }
                    exchange.fields.append(HeaderField(name: name, value: value))
                }
                pending[frame.streamID] = exchange
            }
            if headers.endStream { complete(frame.streamID) }
        case .data(let data):
            // The connection's window update goes once the exchange has the data: a write makes
            // NIO fire the events it holds, among them this stream's StreamClosedEvent when the
            // data ended it, which, finding the exchange still waiting, would fail an answered
            // request (a 503 to the client for a notification the provider took).
            let update = window.received(data, on: .rootStream)
            defer { if let update { context.writeAndFlush(wrapOutboundOut(update), promise: nil) } }
            guard var exchange = pending.removeValue(forKey: frame.streamID) else { return }
            if case .byteBuffer(var bytes) = data.data {
                guard exchange.body.readableBytes + bytes.readableBytes <= 1 << 20 else {
                    exchange.reply(.failure(UpstreamError.answerTooLarge))
                    context.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: frame.streamID, payload: .rstStream(.cancel))), promise: nil)
                    return
                }
                exchange.body.writeBuffer(&bytes)
            }
            if let update = exchange.window.received(data, on: frame.streamID), !data.endStream {
                context.writeAndFlush(wrapOutboundOut(update), promise: nil)
            }
            pending[frame.streamID] = exchange
            if data.endStream { complete(frame.streamID) }
        case .rstStream(let code):
            fail(frame.streamID, code == .refusedStream ? UpstreamError.unsent("stream refused") : UpstreamError.noAnswer("stream reset: \(code)"))
        case .settings(.settings(let settings)):
            for setting in settings where setting.parameter == .maxConcurrentStreams { load.allow(setting.value) }
        case .goAway(let last, _, _):
            // Streams above the last id were not acted on: they go again on another connection.
            lastStreamID = min(lastStreamID ?? last, last)
            load.closingNow()
            for stream in pending.keys where stream > last { fail(stream, UpstreamError.unsent("refused (GOAWAY)")) }
        default:
            break
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // A stream NIO closed without an answer (a protocol error, the connection going away).
        // The type compared first, as `RelayStreams` does: most events are window updates.
        if ObjectIdentifier(type(of: event)) == ObjectIdentifier(StreamClosedEvent.self), let closed = event as? StreamClosedEvent,
           pending[closed.streamID] != nil {
            let refused = closed.reason == .refusedStream || lastStreamID.map { closed.streamID > $0 } ?? false
            fail(closed.streamID, refused ? UpstreamError.unsent("refused") : UpstreamError.noAnswer("the stream closed"))
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        active.fail(ChannelError.ioOnClosedChannel)
        failAll(UpstreamError.noAnswer("the connection closed"))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A stream's own error (NIO names the stream) ends that exchange; anything else the
        // connection, which NIO closes.
        if let streamError = error as? NIOHTTP2Errors.StreamError {
            fail(streamError.streamID, UpstreamError.noAnswer("\(streamError.baseError)"))
        }
        context.fireErrorCaught(error)
    }

    private func complete(_ stream: HTTP2StreamID) {
        guard let exchange = pending.removeValue(forKey: stream) else { return }
        // Answered in order, mostly: the deadlines of those answered go at once, not at the
        // timer's next round (10 s of requests otherwise wait there).
        while let first = deadlines.first, pending[first.stream] == nil { deadlines.removeFirst() }
        guard let status = exchange.status else {
            exchange.reply(.failure(UpstreamError.noAnswer("the stream ended without a status")))
            return
        }
        guard exchange.declaredLength.map({ $0 == exchange.body.readableBytes }) ?? true else {
            exchange.reply(.failure(UpstreamError.noAnswer("the answer's body is not its content-length")))
            return
        }
        exchange.reply(.success(Forwarder.Answer(status: status, headers: exchange.fields, body: exchange.body)))
    }

    private func fail(_ stream: HTTP2StreamID, _ error: UpstreamError) {
        pending.removeValue(forKey: stream)?.reply(.failure(error))
    }

    private func failAll(_ error: UpstreamError) {
        let all = pending
        pending = [:]
        deadlines.removeAll()
        timer?.cancel()
        timer = nil
        for exchange in all.values { exchange.reply(.failure(error)) }
    }

    private func armTimer(_ context: ChannelHandlerContext) {
        while let first = deadlines.first, pending[first.stream] == nil { deadlines.removeFirst() }
        guard let first = deadlines.first else { return }
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(deadline: first.deadline) { loopBound.value.timedOut() }
    }

    /// Every request past its deadline ends `timedOut`, its stream reset upstream.
    private func timedOut() {
        timer = nil
        guard let context else { return }
        let now = NIODeadline.now()
        while let first = deadlines.first, first.deadline <= now {
            deadlines.removeFirst()
            guard pending[first.stream] != nil else { continue }
            fail(first.stream, .timedOut)
            context.write(wrapOutboundOut(HTTP2Frame(streamID: first.stream, payload: .rstStream(.cancel))), promise: nil)
        }
        context.flush()
        armTimer(context)
    }
}
