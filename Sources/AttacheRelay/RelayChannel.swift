import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP2
import NIOHTTPTypes
import NIOSSL
import NIOTLS
import ServiceLifecycle

/// The relay's front door: HTTP/2, as APNs clients speak, and HTTP/1.1 on the same port, as many
/// FCM clients do (firebase-admin's Python and Java SDKs). Over TLS, ALPN decides when the client
/// offers it; otherwise (clear text, a sidecar on loopback, or a TLS client that sets no ALPN, as
/// aioapns with a context of the user's making does, which Apple answers in HTTP/2 all the same)
/// the first bytes a client sends: HTTP/2's connection preface, or anything else.
struct RelayChannel: HTTPChannelHandler {
    struct Value: ServerChildChannelValue {
        let negotiated: EventLoopFuture<NIONegotiatedHTTPVersion<HTTP1Channel.Value, RelayHTTP2.Connection>>
        let channel: any Channel
    }

    private let tls: NIOSSLContext?
    private let http1: HTTP1Channel
    private let http2: RelayHTTP2
    var responder: Responder { http1.responder }

    /// `tls`: the relay's certificate, offering ALPN `h2` and `http/1.1`; nil: clear text.
    /// The first handler of each connection: the caps on connections.
    private let cap: @Sendable () -> ConnectionCap

    init(responder: @escaping Responder, tls: NIOSSLContext?, http1: HTTP1Channel.Configuration, http2: RelayHTTP2,
         cap: @escaping @Sendable () -> ConnectionCap) {
        self.cap = cap
        self.tls = tls
        self.http1 = HTTP1Channel(responder: responder, configuration: http1)
        self.http2 = http2
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        typealias Negotiated = NIONegotiatedHTTPVersion<HTTP1Channel.Value, RelayHTTP2.Connection>
        return channel.eventLoop.makeCompletedFuture {
            // The protocol negotiation handler that TLS's ALPN feeds, fed here by the preface.
            let negotiation = NIOTypedApplicationProtocolNegotiationHandler<Negotiated> { result in
                if case .negotiated("h2") = result {
                    return channel.eventLoop.makeCompletedFuture { .http2(try http2.setup(channel: channel)) }
                }
                return http1.setup(channel: channel, logger: logger).map { .http1_1($0) }
            }
            let deciders: [any ChannelHandler] = tls.map { [NIOSSLServerHandler(context: $0), PrefaceSniffer(afterTLS: true)] }
                ?? [PrefaceSniffer()]
            try channel.pipeline.syncOperations.addHandlers([cap()] + deciders + [negotiation])
            return Value(negotiated: negotiation.protocolNegotiationResult, channel: channel)
        }
    }

    func handle(value: Value, logger: Logger) async {
        do {
            // A connection that has not agreed a protocol yet is closed at shutdown; once it
            // has, HTTP/1.1's and HTTP/2's own handling drains it.
            let negotiated = try await withGracefulShutdownHandler {
                try await value.negotiated.get()
            } onGracefulShutdown: {
                value.channel.pipeline.handler(type: PrefaceSniffer.self).whenSuccess { _ in value.channel.close(promise: nil) }
            }
            switch negotiated {
            case .http1_1(let connection): await http1.handle(value: connection, logger: logger)
            case .http2(let connection): await http2.handle(connection)
            }
        } catch {
            logger.debug("no protocol agreed on a clear-text connection", metadata: ["attache.error": "\(error)"])
        }
    }
}

/// Reads until the client's first bytes show whether they begin HTTP/2's connection preface,
/// reports that as a negotiated protocol, passes the bytes on and leaves the pipeline.
/// A client that sends nothing for 10 seconds, or closes its side first, is closed. Behind TLS it waits for the handshake:
/// a protocol agreed by ALPN goes on as it is, and the bytes decide only when none was.
final class PrefaceSniffer: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
    private var seen = ByteBuffer()
    private var silence: Scheduled<Void>?
    /// Reading the first bytes now (clear text from the start; behind TLS once the handshake
    /// agreed no protocol).
    private var sniffing: Bool

    init(afterTLS: Bool = false) {
        sniffing = !afterTLS
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if sniffing { startSilence(context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        silence?.cancel()
    }

    private func startSilence(_ context: ChannelHandlerContext) {
        let channel = context.channel
        silence = context.eventLoop.scheduleTask(in: .seconds(10)) { channel.close(promise: nil) }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // A client that closed its side before saying anything has gone: its place under the
        // connection caps is free now, not after the silence.
        if let event = event as? ChannelEvent, event == .inputClosed {
            context.close(promise: nil)
            return
        }
        guard !sniffing, case .handshakeCompleted(let agreed)? = event as? TLSUserEvent else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        guard agreed != nil else {
            sniffing = true  // no ALPN: the first bytes decide, and say so in this event's place
            startSilence(context)
            return
        }
        context.fireUserInboundEventTriggered(event)
        context.pipeline.syncOperations.removeHandler(self, promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard sniffing else {
            context.fireChannelRead(data)
            return
        }
        var bytes = unwrapInboundIn(data)
        seen.writeBuffer(&bytes)
        let prefix = seen.readableBytesView.prefix(Self.preface.count)
        let h2 = prefix.elementsEqual(Self.preface)
        guard h2 || !Self.preface.starts(with: prefix) else { return }  // a preface so far, not whole yet
        context.fireUserInboundEventTriggered(TLSUserEvent.handshakeCompleted(negotiatedProtocol: h2 ? "h2" : "http/1.1"))
        context.fireChannelRead(wrapInboundOut(seen))
        seen = ByteBuffer()
        context.pipeline.syncOperations.removeHandler(self, promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.fireChannelReadComplete()
    }

    typealias InboundOut = ByteBuffer
}

/// An HTTP/1.1 request goes upstream only once the client has sent all of it (HTTP/2's streams:
/// `RelayStream`). Hummingbird takes the end of a connection for the end of the body: a client
/// that closes its connection after the head, or after half a body, would have that much sent to
/// Apple as a finished request (and, retrying, the notification sent twice). So a connection that
/// ends inside a request (after its head, before its end) raises `Incomplete` to the reader of the
/// body, which then forwards nothing.
final class RequestMustEnd: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    /// The client went away inside a request.
    struct Incomplete: Error {}

    private var inRequest = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head: inRequest = true
        case .end: inRequest = false
        case .body: break
        }
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if inRequest {
            inRequest = false
            context.fireErrorCaught(Incomplete())
        }
        context.fireChannelInactive()
    }
}
