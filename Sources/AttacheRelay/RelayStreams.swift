import Attache
import AttacheHTTPKit
import NIOCore
import NIOHPACK
import NIOHTTP2

/// A client's HTTP/2 connection, read and answered in HTTP/2's own frames: each stream's request
/// is gathered on the event loop and goes to the controller only once its END_STREAM has arrived
/// — a client that resets the stream or closes its connection before that has nothing of it sent
/// upstream (and, retrying, no notification sent twice). The answer goes back as HEADERS and at
/// most one DATA frame, the last carrying END_STREAM, as Apple's do (a 200 is one HEADERS frame;
/// aioapns parses any DATA frame it gets as JSON, an empty one too).
///
/// NIO's HTTP/2 handler before it keeps the protocol (HPACK, stream states, its limits on
/// concurrent streams, resets and control frames); a request's header block is checked here, as
/// it is read (`RelayRequest(validating:)`); no stream channel, request or response
/// object, body sequence or writer stands between the frames and the controller: each cost more
/// per passthrough request than forwarding it. So this handler also gives back the client's
/// inbound window, and keeps the connection's idle timeout and its drain (at shutdown, and
/// after an error).
final class RelayStreams: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private enum Stream {
        /// Gathering the body of a request to send, the stream's window used by it, and when its
        /// body must be in.
        case body(RelayRequest, Provider, app: String?, window: InboundWindow, until: NIODeadline)
        /// Answered before the client finished sending (a refused path or method, a body too
        /// large): what it still sends is dropped and its window given back, so that a client
        /// that sends its whole body before it reads (httpx does) gets to its answer instead of
        /// waiting out its own timeout on a full window.
        case draining(InboundWindow, until: NIODeadline)
        /// Answered, or being answered, with the request whole: the client sends nothing more.
        case answering
        /// Answered with a body that the client's flow-control window holds back (a client that
        /// gives no window would hold the stream, and its place in flight, for ever): reset if
        /// the client has not taken it by then.
        case sending(until: NIODeadline)
    }

    private let controller: RelayController
    /// Streams being answered across every connection, and how many may be.
    private let inFlight: InFlight
    private let maxInFlight: Int
    private let idleTimeout: Duration?
    /// How long a stream has from its HEADERS to its END_STREAM, and an answer that the client's
    /// window holds back to go out.
    private let bodyTimeout: TimeAmount
    private var context: ChannelHandlerContext?
    /// The connection's event loop as a task executor: where its payloads are enriched.
    private var executor: LoopTaskExecutor?
    /// The streams this handler took on (each holds a place in `inFlight` until it closes).
    private var streams: [HTTP2StreamID: Stream] = [:]
    /// Every stream NIO has open, those refused too: what the idle timeout and the drain go by.
    private var open = 0
    /// The last stream taken on (answered, or being answered): what a GOAWAY names.
    private var highest = HTTP2StreamID(0)
    /// Where the connection stands: taking streams on; draining, none taken on and those in
    /// flight answered (at a graceful shutdown, with a GOAWAY once they are); or its close on
    /// its way.
    private enum Phase {
        case serving
        case draining(goAway: Bool)
        case closing
    }
    private var phase = Phase.serving
    private var draining: Bool {
        if case .serving = phase { return false }
        return true
    }
    private var idle: Scheduled<Void>?
    /// Armed while a body (a request's coming in, an answer's going out) is not through, for the
    /// earliest such deadline.
    private var bodyTimer: Scheduled<Void>?
    /// The connection's inbound window.
    private var window = InboundWindow()

    init(controller: RelayController, inFlight: InFlight, maxInFlight: Int, idleTimeout: Duration?, bodyTimeout: Duration) {
        self.controller = controller
        self.inFlight = inFlight
        self.maxInFlight = maxInFlight
        self.idleTimeout = idleTimeout
        self.bodyTimeout = .nanoseconds(Int64(bodyTimeout.nanoseconds))
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        executor = LoopTaskExecutor(context.eventLoop)
        armIdle()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stop()
        bodyTimer?.cancel()
        bodyTimer = nil
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        let id = frame.streamID
        switch frame.payload {
        case .headers(let headers):
            if let stream = streams[id] {
                // Trailers: the request ends with them.
                if headers.endStream, case .body = stream { send(id) }
                return
            }
            opened(id, headers: headers.headers, endStream: headers.endStream)
        case .data(let data):
            if let update = window.received(data, on: .rootStream) { context.writeAndFlush(wrapOutboundOut(update), promise: nil) }
            // Found once, and taken out of its place (marked answering): the request is out of
            // the table while its body grows, neither copied nor left shared.
            guard let index = streams.index(forKey: id) else { return }
            let taken = Self.take(&streams.values[index])
            guard case .body(var request, let provider, let app, var streamWindow, let until) = taken else {
                if case .draining(let streamWindow, let until) = taken { drain(data, on: id, window: streamWindow, until: until) }
                return
            }
            if case .byteBuffer(var bytes) = data.data, bytes.readableBytes > 0 {
                guard request.body.readableBytes + bytes.readableBytes <= controller.configuration.maxBodyBytes else {
                    streams[id] = .draining(streamWindow, until: until)
                    write(provider.error(413, "PayloadTooLarge", request: request), on: id)
                    drain(data, on: id, window: streamWindow, until: until)
                    return
                }
                guard request.body.readableBytes + bytes.readableBytes <= request.declaredLength ?? .max else {
                    malformed(id)
                    return
                }
                // A body in one DATA frame (a notification's, nearly always) is that frame's bytes.
                if request.body.readableBytes == 0 { request.body = bytes } else { request.body.writeBuffer(&bytes) }
            }
            if data.endStream {
                // Sent from here, not put back in the table to be taken out again.
                forward(id, request, provider: provider, app: app)
                return
            }
            if let update = streamWindow.received(data, on: id) { context.writeAndFlush(wrapOutboundOut(update), promise: nil) }
            streams[id] = .body(request, provider, app: app, window: streamWindow, until: until)
        case .rstStream:
            controller.metrics.clientReset()
        default:
            break
        }
    }

    /// A DATA frame on a stream already answered: dropped, its window given back.
    /// Its last frame needs no update: the stream closes with it.
    private func drain(_ data: HTTP2Frame.FramePayload.Data, on id: HTTP2StreamID, window: InboundWindow, until: NIODeadline) {
        guard !data.endStream else { return }
        var window = window
        let update = window.received(data, on: id)
        // Back in the table before anything is written: a write fires the events NIO holds.
        streams[id] = .draining(window, until: until)
        if let update { context?.writeAndFlush(wrapOutboundOut(update), promise: nil) }
    }

    /// What `stream` held, `stream` now answering.
    private static func take(_ stream: inout Stream) -> Stream {
        var taken = Stream.answering
        swap(&taken, &stream)
        return taken
    }

    /// A new stream's HEADERS: reset when malformed, refused past the limit in flight or on a
    /// connection that drains, answered at once when it is not a send, else gathered.
    private func opened(_ id: HTTP2StreamID, headers: HPACKHeaders, endStream: Bool) {
        // Past the limit a stream is refused unprocessed, which a client may send again: a client
        // that opens streams faster than they are answered would otherwise pile them up without
        // bound. A draining connection refuses new streams: opened before the client read its
        // SETTINGS or the GOAWAY of NIO's that names them all, after an error.
        guard let request = RelayRequest(validating: headers, loop: context?.eventLoop) else {
            context?.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .rstStream(.protocolError))), promise: nil)
            return
        }
        guard !draining, inFlight.enter(limit: maxInFlight) != nil else {
            context?.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .rstStream(.refusedStream))), promise: nil)
            return
        }
        highest = max(highest, id)
        let route = RelayRoute(method: request.method, path: request.path, topic: request.topic)
        guard case .send(let provider, let app) = route else {
            streams[id] = endStream ? .answering : .draining(InboundWindow(), until: bodyDeadline())
            write(route.refusal(request)!, on: id)
            return
        }
        guard !endStream else {
            streams[id] = .answering
            forward(id, request, provider: provider, app: app)
            return
        }
        streams[id] = .body(request, provider, app: app, window: InboundWindow(), until: bodyDeadline())
    }

    /// When a body that starts now must be through (a request's in, an answer's out); the timer
    /// armed for it if none is (an armed one is for an earlier deadline: each is now plus the
    /// same timeout).
    private func bodyDeadline() -> NIODeadline {
        let until = NIODeadline.now() + bodyTimeout
        if bodyTimer == nil { armBodyTimer(at: until) }
        return until
    }

    private func armBodyTimer(at deadline: NIODeadline) {
        guard let context else { return }
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        bodyTimer = context.eventLoop.scheduleTask(deadline: deadline) { bound.value.bodiesDue() }
    }

    /// Streams whose body is not through by their deadline are reset, as HTTP/1.1's body timeout
    /// closes the connection: a client that opens streams and stops sending, or gives no window
    /// for its answers, would otherwise hold its places in flight (the relay's, every
    /// connection's) for as long as it keeps the connection (no idle timeout runs while a stream
    /// is open). One not yet answered is reset CANCEL, nothing of it sent; one answered before
    /// its request ended NO_ERROR, which RFC 9113 § 8.1 has a server send after a complete
    /// response to stop the rest of a request; one whose answer is held back CANCEL.
    private func bodiesDue() {
        bodyTimer = nil
        if let next = resetUnfinished(by: .now()) { armBodyTimer(at: next) }
    }

    /// Resets the streams whose body was due through by `deadline`; the earliest deadline of
    /// those left.
    private func resetUnfinished(by deadline: NIODeadline) -> NIODeadline? {
        var due: [(HTTP2StreamID, HTTP2ErrorCode)] = []
        var next: NIODeadline?
        for (id, stream) in streams {
            let until: NIODeadline, code: HTTP2ErrorCode
            switch stream {
            case .body(_, _, _, _, let deadline): (until, code) = (deadline, .cancel)
            case .draining(_, let deadline): (until, code) = (deadline, .noError)
            case .sending(let deadline): (until, code) = (deadline, .cancel)
            case .answering: continue
            }
            if until <= deadline { due.append((id, code)) } else { next = min(next ?? until, until) }
        }
        // After the walk: a reset closes its stream, whose event takes it out of the table.
        for (id, code) in due {
            context?.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .rstStream(code))), promise: nil)
        }
        if !due.isEmpty { context?.flush() }
        return next
    }

    /// The client closed its side of the connection (the channel allows half-closure, which
    /// HTTP/1.1's guard needs): nothing more comes from it, so no stream opens and a body not all
    /// in never will be (reset, nothing of it sent); the streams being answered are, for a client
    /// that still reads, and then the connection closes. Left open, it held its streams' places
    /// in flight until the body timeout, then itself until the idle timeout.
    private func inputClosed(_ context: ChannelHandlerContext) {
        stop()
        _ = resetUnfinished(by: .distantFuture)
        if open == 0 { closeDrained(context) }
    }

    /// The whole request goes to the controller; its answer comes back on this connection's
    /// loop. A passthrough is forwarded from here; a request to enrich goes to a task that runs
    /// on this loop too (its extension's task as well), which sends it upstream on a connection
    /// of this loop, whose answer is written from here: with the media cached, no thread hop.
    private func send(_ id: HTTP2StreamID) {
        guard let index = streams.index(forKey: id), case .body(let request, let provider, let app, _, _) = Self.take(&streams.values[index])
        else { return }
        forward(id, request, provider: provider, app: app)
    }

    /// `send`, for a request already out of the table (its stream marked answering).
    private func forward(_ id: HTTP2StreamID, _ request: RelayRequest, provider: Provider, app: String?) {
        guard let context else { return }
        guard request.declaredLength.map({ $0 == request.body.readableBytes }) ?? true else {
            malformed(id)
            return
        }
        let (controller, loop) = (controller, context.eventLoop)
        let answer: EventLoopFuture<RelayAnswer>
        switch controller.start(request, provider: provider, app: app, on: loop) {
        case .answered(let atOnce):
            answer = atOnce
        case .task(let pending):
            let promise = loop.makePromise(of: RelayAnswer.self)
            let executor = executor
            Task(executorPreference: executor) {
                await ExtensionRuntime.$workExecutor.withValue(executor) {
                    promise.completeWith(await controller.relayInTask(request, provider: provider, app: app, pending))
                }
            }
            answer = promise.futureResult
        }
        let bound = NIOLoopBound(self, eventLoop: loop)
        answer.hop(to: loop).whenSuccess { answer in bound.value.write(answer, on: id) }
    }

    /// A request whose body is not the length its `content-length` said: malformed (RFC 9113
    /// § 8.1.1), its stream reset, nothing of it sent.
    private func malformed(_ id: HTTP2StreamID) {
        streams[id] = .answering
        context?.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .rstStream(.protocolError))), promise: nil)
    }

    /// The answer, on a stream still open (one the client reset has nobody to read it).
    private func write(_ answer: RelayAnswer, on id: HTTP2StreamID) {
        // Looked up by its key alone: reading the entry would copy the request it may hold.
        guard let context, streams.index(forKey: id) != nil else { return }
        // Made from pairs, as `Connection.send` makes the upstream's head: `HPACKHeaders.add`
        // checks each name byte by byte, and these are the relay's own or checked as read.
        var pairs: [(String, String)] = []
        pairs.reserveCapacity(answer.fieldCount + 2)
        pairs.append((":status", String(answer.status)))
        answer.forEachField { pairs.append(($0, $1)) }
        let empty = answer.body.readableBytes == 0
        if !empty { pairs.append(("content-length", String(answer.body.readableBytes))) }
        let head = HPACKHeaders(pairs)
        context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .headers(.init(headers: head, endStream: empty)))), promise: nil)
        if !empty {
            context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .data(.init(data: .byteBuffer(answer.body), endStream: true)))),
                          promise: nil)
        }
        context.flush()
        // Still open after the flush: the client's window holds the body back. (A body-less
        // answer, an APNs 200, is one HEADERS frame, which no window holds.)
        if !empty, let index = streams.index(forKey: id), case .answering = streams.values[index] {
            streams.values[index] = .sending(until: bodyDeadline())
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // Most events are window updates: their type is compared before any cast, which for an
        // `Any` that is not the type asked for costs a walk through the runtime's conformances.
        let type = ObjectIdentifier(Swift.type(of: event))
        if type == ObjectIdentifier(NIOHTTP2StreamCreatedEvent.self) {
            open += 1
            idle?.cancel()
            idle = nil
        } else if type == ObjectIdentifier(StreamClosedEvent.self), let closed = event as? StreamClosedEvent {
            ended(closed.streamID)
            open -= 1
            if open == 0 {
                if draining { closeDrained(context) } else { armIdle() }
            }
        } else if type == ObjectIdentifier(ChannelEvent.self), event as? ChannelEvent == .inputClosed {
            inputClosed(context)
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// A stream closed (answered, reset, or its connection gone): its place in flight is free;
    /// a request it had not finished sending goes nowhere.
    private func ended(_ id: HTTP2StreamID) {
        guard let stream = streams.removeValue(forKey: id) else { return }
        if case .body = stream { controller.metrics.abandoned() }
        inFlight.leave()
    }

    /// An error NIO's handler met on this connection: a connection error, after which it has
    /// sent GOAWAY and the connection must close (RFC 9113 § 5.4.1), or a stream's, a peer that
    /// breaks the protocol too. Either way the connection drains: no new stream, those in flight
    /// answered (a send already forwarded keeps its answer, for a client that still reads), then
    /// closed, not left to the idle timeout.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if !draining {
            stop()
            if open == 0 { context.close(promise: nil) }
        }
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        for id in Array(streams.keys) { ended(id) }
        stop()
        context.fireChannelInactive()
    }

    private func armIdle() {
        guard let idleTimeout, !draining, let context else { return }
        let channel = context.channel
        idle = context.eventLoop.scheduleTask(in: .nanoseconds(Int64(idleTimeout.nanoseconds))) { channel.close(promise: nil) }
    }

    /// Draining from now (a drain already begun keeps its GOAWAY). The idle timer holds the
    /// channel: it goes with the connection, not minutes later.
    private func stop(goAway: Bool = false) {
        if case .serving = phase { phase = .draining(goAway: goAway) }
        idle?.cancel()
        idle = nil
    }

    /// At graceful shutdown: no new stream (SETTINGS_MAX_CONCURRENT_STREAMS 0, which clients
    /// honour by sending their next requests on another connection; one opened before the client
    /// read it is refused, unprocessed), the streams in flight answered, then GOAWAY naming the
    /// last stream taken on, and the close. The GOAWAY goes last, not first as RFC 9113 § 6.8
    /// allows: aioapns, built on python's h2, which takes any GOAWAY for the connection's end and
    /// reads no answer after it, sends the requests it had in flight again, on a new
    /// connection: each a notification sent twice.
    func quiesce() {
        guard !draining, let context else { return }
        stop(goAway: true)
        guard open > 0 else {
            closeDrained(context)
            return
        }
        let settings = HTTP2Frame.FramePayload.settings(.settings([HTTP2Setting(parameter: .maxConcurrentStreams, value: 0)]))
        context.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: settings)), promise: nil)
    }

    /// A draining connection with nothing open: closed, after its GOAWAY at a graceful shutdown.
    /// That comes on the event loop's next turn: the last stream closes as its answer's final
    /// frame is written, before the writer's flush; the GOAWAY and the close go after that.
    private func closeDrained(_ context: ChannelHandlerContext) {
        // Once: a stream refused before the close closes too.
        guard case .draining(let goAway) = phase else { return }
        phase = .closing
        guard goAway else {
            context.close(promise: nil)
            return
        }
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.execute {
            let (streams, context) = bound.value
            let goAway = HTTP2Frame.FramePayload.goAway(lastStreamID: streams.highest, errorCode: .noError, opaqueData: nil)
            context.writeAndFlush(streams.wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: goAway)), promise: nil)
            context.close(promise: nil)
        }
    }
}
