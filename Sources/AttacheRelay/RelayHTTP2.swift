import AttacheHTTPKit
import NIOCore
import NIOHTTP2
import ServiceLifecycle

/// The relay's HTTP/2 door: each stream is answered by a `RelayStream` put on it as it opens, in
/// the stream's initializer, so no stream ever waits in a queue for a reader that may be gone.
///
/// Not Hummingbird's `HTTP2Channel`, which hands each new stream to the connection's task through
/// an `AsyncThrowingStream`: a client that opens streams and breaks its connection in one burst
/// (the rapid-reset attack, or any client that opens many streams and disconnects) made streams
/// open after that sequence had ended, each dropped with its `NIOAsyncChannel` unfinished, which
/// NIO stops the process for (a precondition, in release builds too).
struct RelayHTTP2: Sendable {
    struct Connection: Sendable {
        let channel: any Channel
        let streams: NIOLoopBound<OpenStreams>
    }

    /// What answers each stream's request.
    let controller: RelayController
    /// A connection with no stream open for this long is closed; nil: never.
    let idleTimeout: Duration?
    /// Streams being answered across every connection, and how many may be.
    let inFlight = InFlight()
    static let maxStreamsInFlight = 4096

    /// Puts HTTP/2 on `channel` (on its event loop), each stream answered by a `RelayStream`.
    func setup(channel: any Channel) throws -> Connection {
        let streams = NIOLoopBound(OpenStreams(channel: channel, idleTimeout: idleTimeout), eventLoop: channel.eventLoop)
        // NIO's defaults: 100 concurrent streams, 16 KB of headers, its limits on resets and
        // control frames (rapid reset, ping and settings floods).
        try channel.pipeline.syncOperations.addHandler(FlushCoalescer())
        _ = try channel.pipeline.syncOperations.configureHTTP2Pipeline(
            mode: .server, connectionConfiguration: .init(), streamConfiguration: .init(),
            streamDelegate: StreamDelegate(streams: streams)
        ) { [inFlight, controller] stream in
            stream.eventLoop.makeCompletedFuture {
                // Past the limit a stream is refused unprocessed, which a client may send again:
                // each waiting task holds its stream (about 20 KB), and a client that opens and
                // resets streams faster than they are answered would otherwise pile them up
                // without bound (280 MB under 80 connections resetting 150 streams each).
                guard inFlight.enter(limit: Self.maxStreamsInFlight) != nil else {
                    stream.writeAndFlush(HTTP2Frame.FramePayload.rstStream(.refusedStream), promise: nil)
                    stream.close(promise: nil)
                    return
                }
                try stream.pipeline.syncOperations.addHandler(RelayStream(controller: controller, onClose: { inFlight.leave() }))
            }
        }
        streams.value.armIdle()
        // The idle timer holds the channel: it goes with the connection, not minutes later.
        channel.closeFuture.whenComplete { _ in streams.value.stop() }
        return Connection(channel: channel, streams: streams)
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

/// The streams open on one connection, on its event loop: what its idle timeout and its draining
/// at shutdown go by.
final class OpenStreams {
    private let channel: any Channel
    private let idleTimeout: Duration?
    private var open = 0
    private var highest = HTTP2StreamID(0)
    private var draining = false
    private var idle: Scheduled<Void>?

    init(channel: any Channel, idleTimeout: Duration?) {
        self.channel = channel
        self.idleTimeout = idleTimeout
    }

    func created(_ id: HTTP2StreamID) {
        open += 1
        highest = max(highest, id)
        idle?.cancel()
        idle = nil
    }

    func closed() {
        open -= 1
        guard open == 0 else { return }
        if draining { channel.close(promise: nil) } else { armIdle() }
    }

    func armIdle() {
        guard let idleTimeout, !draining else { return }
        let channel = channel
        idle = channel.eventLoop.scheduleTask(in: .nanoseconds(Int64(idleTimeout.nanoseconds))) { channel.close(promise: nil) }
    }

    func stop() {
        draining = true
        idle?.cancel()
        idle = nil
    }

    /// GOAWAY naming the last stream opened (those in flight are answered); closed now if none is.
    func quiesce() {
        guard !draining else { return }
        draining = true
        idle?.cancel()
        let goAway = HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: highest, errorCode: .noError, opaqueData: nil))
        channel.writeAndFlush(goAway, promise: nil)
        if open == 0 { channel.close(promise: nil) }
    }
}

/// NIO tells it of each stream's opening and closing, on the connection's event loop.
private struct StreamDelegate: NIOHTTP2StreamDelegate {
    let streams: NIOLoopBound<OpenStreams>

    func streamCreated(_ id: HTTP2StreamID, channel: any Channel) { streams.value.created(id) }
    func streamClosed(_ id: HTTP2StreamID, channel: any Channel) { streams.value.closed() }
}


/// Many streams' frames in one write to the socket (behind TLS, in as few records): a flush asked
/// for while one is already scheduled on this event loop joins it. A proxy's streams end in
/// bursts — one read of an upstream's connection answers dozens of clients' streams — and a
/// flush each made a system call (and a TLS record) per request, which cost more than the frames
/// themselves. Sits between HTTP/2 and the socket (or TLS), on the relay's connections both ways.
final class FlushCoalescer: ChannelOutboundHandler {
    typealias OutboundIn = ByteBuffer
    private var scheduled = false

    func flush(context: ChannelHandlerContext) {
        guard !scheduled else { return }
        scheduled = true
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.execute {
            let (coalescer, context) = loopBound.value
            coalescer.flushNow(context)
        }
    }

    /// What was written goes before the close: a GOAWAY written and flushed just before it, say.
    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        flushNow(context)
        context.close(mode: mode, promise: promise)
    }

    private func flushNow(_ context: ChannelHandlerContext) {
        guard scheduled else { return }
        scheduled = false
        context.flush()
    }
}
