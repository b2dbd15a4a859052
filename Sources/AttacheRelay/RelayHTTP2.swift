import AttacheHTTPKit
import NIOCore
import NIOHTTP2
import ServiceLifecycle

/// The relay's HTTP/2 door: NIO's HTTP/2 handler and `RelayStreams` on each connection, which
/// answers every stream as its frames arrive, so no stream ever waits in a queue for a reader
/// that may be gone.
///
/// Not Hummingbird's `HTTP2Channel`, which hands each new stream to the connection's task through
/// an `AsyncThrowingStream`: a client that opens streams and breaks its connection in one burst
/// (the rapid-reset attack, or any client that opens many streams and disconnects) made streams
/// open after that sequence had ended, each dropped with its `NIOAsyncChannel` unfinished, which
/// NIO stops the process for (a precondition, in release builds too).
struct RelayHTTP2: Sendable {
    struct Connection: Sendable {
        let channel: any Channel
        let streams: NIOLoopBound<RelayStreams>
    }

    /// What answers each stream's request.
    let controller: RelayController
    /// A connection with no stream open for this long is closed; nil: never.
    let idleTimeout: Duration?
    /// How long a stream has from its HEADERS to the end of its body, and an answer that the
    /// client's window holds back to go out; past it, the stream is reset.
    let bodyTimeout: Duration
    /// Streams being answered across every connection, and how many may be: past that a stream
    /// is refused (REFUSED_STREAM, which a client sends again).
    let inFlight = InFlight()
    static let maxStreamsInFlight = 4096

    /// Puts HTTP/2 on `channel` (on its event loop), its streams answered by `RelayStreams`.
    func setup(channel: any Channel) throws -> Connection {
        let streams = RelayStreams(controller: controller, inFlight: inFlight, maxInFlight: Self.maxStreamsInFlight, idleTimeout: idleTimeout,
                                    bodyTimeout: bodyTimeout)
        // NIO's defaults: 100 concurrent streams, 16 KB of headers, its limits on resets and
        // control frames (rapid reset, ping and settings floods). Its header and content-length
        // validation are off: `RelayStreams` checks each request's block as it reads it, and its
        // body against its `content-length`; what the relay answers is its own fields and those
        // it passes back from the upstream, checked there, with a `content-length` it counts.
        // NIO's checks read every block's fields again, four times a forwarded request (3.6 % of
        // its instructions for the content length alone).
        var connection = NIOHTTP2Handler.ConnectionConfiguration()
        connection.headerBlockValidation = .disabled
        connection.contentLengthValidation = .disabled
        try channel.pipeline.syncOperations.addHandlers([
            FlushCoalescer(), NIOHTTP2Handler(mode: .server, connectionConfiguration: connection, streamConfiguration: .init()), streams,
        ])
        return Connection(channel: channel, streams: NIOLoopBound(streams, eventLoop: channel.eventLoop))
    }

    /// Runs until the connection closes. At graceful shutdown: GOAWAY, no new stream, and the
    /// connection closed once the streams in flight have been answered.
    func handle(_ connection: Connection) async {
        await withGracefulShutdownHandler {
            try? await connection.channel.closeFuture.get()
        } onGracefulShutdown: {
            connection.channel.eventLoop.execute { connection.streams.value.quiesce() }
        }
    }
}

/// Many streams' frames in one write to the socket, behind TLS in one record: the bytes written
/// are gathered into one buffer, and a flush asked for while one is already scheduled on this
/// event loop joins it. A proxy's streams end in bursts — one read of an upstream's connection
/// answers dozens of clients' streams — and a write and flush each made a system call and a TLS
/// record per frame, which cost more than the frames themselves, on both ends of the connection.
/// Sits between HTTP/2 and the socket (or TLS), on the relay's connections both ways.
final class FlushCoalescer: ChannelOutboundHandler {
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData
    private var scheduled = false
    private var gathered: ByteBuffer?
    private var promises: [EventLoopPromise<Void>] = []
    /// Past this, what is gathered goes on without waiting for the flush.
    private static let most = 64 * 1024

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .byteBuffer(var bytes) = unwrapOutboundIn(data) else {
            writeGathered(context)
            context.write(data, promise: promise)
            return
        }
        if gathered == nil { gathered = bytes } else { gathered!.writeBuffer(&bytes) }
        if let promise { promises.append(promise) }
        if gathered!.readableBytes >= Self.most { writeGathered(context) }
    }

    func flush(context: ChannelHandlerContext) {
        guard !scheduled else { return }
        scheduled = true
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.execute {
            let (coalescer, context) = loopBound.value
            coalescer.flushNow(context)
        }
    }

    /// What was written goes before the close, flushed or not yet: a GOAWAY written and flushed
    /// just before it, or the last answer of a draining connection, whose stream closes — and
    /// with it the connection — as its final frame is written, before its writer's flush.
    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        scheduled = false
        writeGathered(context)
        context.flush()
        context.close(mode: mode, promise: promise)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        flushNow(context)
    }

    private func flushNow(_ context: ChannelHandlerContext) {
        guard scheduled else { return }
        scheduled = false
        writeGathered(context)
        context.flush()
    }

    private func writeGathered(_ context: ChannelHandlerContext) {
        guard let bytes = gathered else { return }
        gathered = nil
        var promise: EventLoopPromise<Void>?
        if !promises.isEmpty {
            let waiting = promises
            promises = []
            promise = context.eventLoop.makePromise()
            promise!.futureResult.whenComplete { result in
                for waiter in waiting { waiter.completeWith(result) }
            }
        }
        context.write(wrapOutboundOut(.byteBuffer(bytes)), promise: promise)
    }
}
