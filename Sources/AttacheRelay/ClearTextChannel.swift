import Hummingbird
import HummingbirdCore
import HummingbirdHTTP2
import Logging
import NIOCore
import NIOHTTP2
import NIOTLS
import ServiceLifecycle

/// The relay's clear-text front door (a sidecar on loopback): HTTP/2 with prior knowledge, as
/// APNs clients speak, and HTTP/1.1 on the same port, as most FCM clients do (firebase-admin's
/// Python and Java SDKs send over HTTP/1.1). The first bytes a client sends decide: HTTP/2's
/// connection preface, or anything else. TLS makes the same choice by ALPN.
struct ClearTextChannel: HTTPChannelHandler {
    struct Value: ServerChildChannelValue {
        let negotiated: EventLoopFuture<NIONegotiatedHTTPVersion<HTTP1Channel.Value, HTTP2Channel.Value>>
        let channel: any Channel
    }

    private let http1: HTTP1Channel
    private let http2: HTTP2Channel
    var responder: Responder { http1.responder }

    init(responder: @escaping Responder, http1: HTTP1Channel.Configuration, http2: HTTP2Channel.Configuration) {
        self.http1 = HTTP1Channel(responder: responder, configuration: http1)
        self.http2 = HTTP2Channel(responder: responder, configuration: http2)
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        typealias Negotiated = NIONegotiatedHTTPVersion<HTTP1Channel.Value, HTTP2Channel.Value>
        return channel.eventLoop.makeCompletedFuture {
            // The protocol negotiation handler that TLS's ALPN feeds, fed here by the preface.
            let negotiation = NIOTypedApplicationProtocolNegotiationHandler<Negotiated> { result in
                if case .negotiated("h2") = result {
                    return http2.setup(channel: channel, logger: logger).map { .http2($0) }
                }
                return http1.setup(channel: channel, logger: logger).map { .http1_1($0) }
            }
            try channel.pipeline.syncOperations.addHandlers([PrefaceSniffer(), negotiation])
            return Value(negotiated: negotiation.protocolNegotiationResult, channel: channel)
        }
    }

    func handle(value: Value, logger: Logger) async {
        do {
            // A connection that has not said which protocol yet is closed at shutdown; once it
            // has, HTTP/1.1's and HTTP/2's own handling drains it.
            let negotiated = try await withGracefulShutdownHandler {
                try await value.negotiated.get()
            } onGracefulShutdown: {
                value.channel.pipeline.handler(type: PrefaceSniffer.self).whenSuccess { _ in value.channel.close(promise: nil) }
            }
            switch negotiated {
            case .http1_1(let connection): await http1.handle(value: connection, logger: logger)
            case .http2(let connection): await http2.handle(value: connection, logger: logger)
            }
        } catch {
            logger.debug("no protocol agreed on a clear-text connection", metadata: ["attache.error": "\(error)"])
        }
    }
}

/// Reads until the client's first bytes show whether they begin HTTP/2's connection preface,
/// reports that as a negotiated protocol, passes the bytes on and leaves the pipeline.
/// A client that sends nothing for 10 seconds is closed.
final class PrefaceSniffer: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
    private var seen = ByteBuffer()
    private var silence: Scheduled<Void>?

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        silence = context.eventLoop.scheduleTask(in: .seconds(10)) { channel.close(promise: nil) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        silence?.cancel()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
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
