import NIOCore
import NIOHPACK
import NIOHTTP2

/// One HTTP/2 stream of a client, read and answered in HTTP/2's own frames: the request's fields
/// and body are gathered on the event loop, and the request goes to the controller only once its
/// END_STREAM has arrived — a client that resets the stream or closes its connection before that
/// has nothing of it sent upstream (and, retrying, no notification sent twice). The answer goes
/// back as HEADERS and at most one DATA frame, the last carrying END_STREAM, as Apple's do (a 200
/// is one HEADERS frame; aioapns parses any DATA frame it gets as JSON, an empty one too).
///
/// No request or response object, body sequence or writer of a framework stands between the
/// frames and the controller: each cost more per passthrough request than forwarding it.
final class RelayStream: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    private let controller: RelayController
    /// Called once, when the stream closes: its place among the streams in flight is free.
    private let onClose: @Sendable () -> Void

    private enum Phase {
        /// Waiting for the request's HEADERS.
        case head
        /// Gathering the body of a request to send.
        case body(Provider, app: String?)
        /// Answered, or being answered: anything more the client sends is dropped.
        case answering
    }

    private var phase = Phase.head
    /// The request being gathered (a stored property, so its body grows in place).
    private var request = RelayRequest(method: "", path: "", fields: [], body: ByteBuffer())
    private var closed = false

    init(controller: RelayController, onClose: @escaping @Sendable () -> Void) {
        self.controller = controller
        self.onClose = onClose
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .headers(let frame):
            guard case .head = phase else {
                // Trailers: the request ends with them.
                if frame.endStream { send(context: context) }
                return
            }
            request.fields.reserveCapacity(frame.headers.count)
            for (name, value, _) in frame.headers {
                switch name {
                case ":method": request.method = value
                case ":path": request.path = value
                case _ where name.hasPrefix(":"): break
                default: request.fields.append((name: name, value: value))
                }
            }
            let route = RelayRoute(method: request.method, path: request.path, topic: request.field("apns-topic"))
            guard case .send(let provider, let app) = route else {
                phase = .answering
                write(route.refusal(request)!, context: context)
                return
            }
            phase = .body(provider, app: app)
            if frame.endStream { send(context: context) }
        case .data(let frame):
            guard case .body(let provider, _) = phase else { return }
            if case .byteBuffer(var bytes) = frame.data, bytes.readableBytes > 0 {
                guard request.body.readableBytes + bytes.readableBytes <= controller.configuration.maxBodyBytes else {
                    phase = .answering
                    write(provider.error(413, "PayloadTooLarge", request: request), context: context)
                    return
                }
                // A body in one DATA frame (a notification's, nearly always) is that frame's bytes.
                if request.body.readableBytes == 0 { request.body = bytes } else { request.body.writeBuffer(&bytes) }
            }
            if frame.endStream { send(context: context) }
        default:
            break
        }
    }

    /// The whole request goes to the controller; its answer comes back on this stream's loop. A
    /// passthrough is forwarded from here; a request to enrich goes to a task.
    private func send(context: ChannelHandlerContext) {
        guard case .body(let provider, let app) = phase else { return }
        phase = .answering
        let (controller, request, loop) = (controller, request, context.eventLoop)
        let loopBound = NIOLoopBound((self, context), eventLoop: loop)
        let answer: EventLoopFuture<RelayAnswer>
        if let atOnce = controller.relayAtOnce(request, provider: provider, app: app, on: loop) {
            answer = atOnce
        } else {
            let promise = loop.makePromise(of: RelayAnswer.self)
            promise.completeWithTask { await controller.relay(request, provider: provider, app: app) }
            answer = promise.futureResult
        }
        answer.hop(to: loop).whenSuccess { answer in
            let (handler, context) = loopBound.value
            handler.write(answer, context: context)
        }
    }

    private func write(_ answer: RelayAnswer, context: ChannelHandlerContext) {
        guard !closed else { return }
        var head = HPACKHeaders()
        head.reserveCapacity(answer.fields.count + 2)
        head.add(name: ":status", value: String(answer.status))
        for (name, value) in answer.fields { head.add(name: name, value: value) }
        let empty = answer.body.readableBytes == 0
        if !empty { head.add(name: "content-length", value: String(answer.body.readableBytes)) }
        context.write(wrapOutboundOut(.headers(.init(headers: head, endStream: empty))), promise: nil)
        if !empty { context.write(wrapOutboundOut(.data(.init(data: .byteBuffer(answer.body), endStream: true))), promise: nil) }
        context.flush()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A stream the client reset says so here, before it closes.
        if error is NIOHTTP2Errors.StreamClosed { controller.metrics.clientReset() }
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if case .body = phase {
            // The stream or its connection ended inside the request: nothing of it goes upstream.
            controller.metrics.abandoned()
            phase = .answering
        }
        if !closed {
            closed = true
            onClose()
        }
        context.fireChannelInactive()
    }
}
