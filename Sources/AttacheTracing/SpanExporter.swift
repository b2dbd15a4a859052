import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import ServiceLifecycle
import Synchronization
import Tracing

/// The ended, sampled spans waiting for the exporter, each already written as OTLP (a `Span` as a
/// field of `ScopeSpans`) on the thread that ended it, into bytes that thread allocated and frees:
/// the exporter takes flat bytes, not records whose strings and arrays it would free across
/// threads. Spans are kept in batches of `batch`, each after `room` bytes kept free for the front
/// of its request; at most `capacity` wait (past that a span is dropped, and counted).
final class SpanBuffer: Sendable {
    /// Spans one after another, from the reader index on.
    struct Batch: Sendable {
        var spans = ByteBuffer()
        var count = 0
        var bytes: [UInt8] { Array(spans.readableBytesView) }
    }

    private struct State {
        /// Full batches, oldest first.
        var batches: [Batch] = []
        /// The batch spans are written into until it is full: apart from the list, so that a
        /// span is written into it without the list's checks.
        var filling: Batch?
        /// Whether a tick or a flush asked for the batch being filled too (`wake`).
        var due = false
        var queued = 0
        var dropped = 0
        /// The bytes the last full or taken batch held: what the next one reserves, since a
        /// buffer that grows copies what it holds.
        var lastSize = 0
        /// An exported batch's storage, for the next batch: fresh storage this large is mapped
        /// anew, and each of its pages faulted in and zeroed by the kernel again.
        var spare: ByteBuffer?
    }

    private let state = Mutex(State())
    let capacity: Int
    let batch: Int
    let room: Int
    /// Each element asks the exporter to look: a full batch, a tick, a flush.
    let signals: AsyncStream<Void>
    private let signal: AsyncStream<Void>.Continuation

    init(capacity: Int, batch: Int, room: Int = 0) {
        self.capacity = max(1, capacity)
        self.batch = max(1, min(batch, capacity))
        self.room = room
        (signals, signal) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    func append(_ span: SpanRecord) {
        var writer = ProtobufWriter(capacity: 1024)
        OTLPEncoding.write(span, into: &writer)
        keep(writer)
    }

    /// A span `OTLPEncoding.span` wrote.
    func keep(_ span: borrowing ProtobufWriter) {
        span.withBytes(keep)
    }

    /// Copied in under the lock: the span's own writing is done outside it.
    private func keep(_ span: UnsafeRawBufferPointer) {
        let full = state.withLock { state in
            guard state.queued < capacity else {
                state.dropped += 1
                return false
            }
            if state.filling == nil {
                var fresh = Batch(spans: state.spare.take() ?? ByteBuffer())
                fresh.spans.clear(minimumCapacity: max(state.lastSize + state.lastSize / 8, room + span.count * min(batch, 64)))
                fresh.spans.moveWriterIndex(forwardBy: room)
                fresh.spans.moveReaderIndex(forwardBy: room)
                state.filling = fresh
            }
            state.queued += 1
            state.filling!.spans.writeBytes(span)
            state.filling!.count += 1
            guard state.filling!.count == batch, let full = state.filling.take() else { return false }
            state.lastSize = full.spans.writerIndex
            state.batches.append(full)
            return true
        }
        if full { signal.yield() }
    }

    /// What the exporter sends next (empty when nothing is due), and how many spans were dropped
    /// since the last call: a full batch; the one being filled only once a tick or a flush asked
    /// for it (`wake`), and then once. As the specification's batch processor does: a batch goes
    /// when it is full or when the schedule's delay is up, not each time the last request comes
    /// back, which under a steady load sent a small batch per round trip, at a cost per request
    /// (to Attache and to the collector) that did not shrink with the load.
    func next() -> (batch: Batch, dropped: Int) {
        state.withLock { state in
            defer { state.dropped = 0 }
            let oldest: Batch?
            if !state.batches.isEmpty {
                oldest = state.batches.removeFirst()
            } else if state.due {
                state.due = false
                oldest = state.filling.take()
            } else {
                oldest = nil
            }
            guard let oldest else { return (Batch(), state.dropped) }
            state.queued -= oldest.count
            state.lastSize = max(state.lastSize, oldest.spans.writerIndex)
            return (oldest, state.dropped)
        }
    }

    /// A batch's storage once it is sent (kept when no other holds it).
    func recycle(_ storage: ByteBuffer) {
        state.withLock { state in
            if state.spare == nil { state.spare = storage }
        }
    }

    /// A tick or a flush: the batch being filled goes too.
    func wake() {
        state.withLock { $0.due = true }
        signal.yield()
    }

    /// Shutdown: the exporter sends what is left, the batch being filled too.
    func finish() {
        state.withLock { $0.due = true }
        signal.finish()
    }
}

/// Sends the buffer's spans on: every `scheduleDelay`, and as soon as a batch is full; at a
/// graceful shutdown, what is left, then it returns. Each batch is one OTLP/HTTP request (or, to
/// the console, a line per span); a batch the collector refuses or does not answer in `timeout`
/// is dropped and logged, as the specification's batch processor drops it.
public struct SpanExporter: Service {
    let buffer: SpanBuffer
    let destination: TracingConfiguration.Destination
    let head: OTLPEncoding.Head
    let scheduleDelay: Duration
    let timeout: Duration
    let logger: Logger

    public func run() async throws {
        // Made once; a TLS context that cannot be made fails each batch, as a collector not reached.
        let client = destination.url.map { url in
            Result { try OTLPHTTPClient(url: url, headers: destination.headers, caFile: destination.caFile, timeout: timeout) }
        }
        defer { try? client?.get().close() }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [buffer, scheduleDelay] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: scheduleDelay)
                    buffer.wake()
                }
            }
            await withGracefulShutdownHandler {
                for await _ in buffer.signals { await exportAll(client) }
            } onGracefulShutdown: { [buffer] in
                buffer.finish()
            }
            group.cancelAll()
        }
        await exportAll(client)
    }

    private func exportAll(_ client: Result<OTLPHTTPClient, any Error>?) async {
        while true {
            var (batch, dropped) = buffer.next()
            if dropped > 0 {
                logger.warning("spans dropped: the export queue was full", metadata: ["attache.spans_dropped": "\(dropped)"])
            }
            guard batch.count > 0 else { return }
            defer { buffer.recycle(batch.spans) }
            guard let client else {
                print(ConsoleSpan.lines(batch.bytes), terminator: "")
                continue
            }
            OTLPEncoding.request(&batch.spans, head: head)
            do {
                let status = try await client.get().post(batch.spans)
                if !(200..<300).contains(status) {
                    logger.warning("the trace collector refused a batch", metadata: ["attache.status": "\(status)", "attache.spans": "\(batch.count)"])
                }
            } catch {
                logger.warning("the trace collector was not reached", metadata: ["attache.error": "\(error)", "attache.spans": "\(batch.count)"])
            }
        }
    }
}

/// One POST per batch to an OTLP/HTTP endpoint, over TLS for `https`, on a connection kept for
/// the batches after it (HTTP/1.1 keep-alive): a connection and its pipeline per batch cost the
/// process more than encoding the batch. A batch sent on a kept connection that the collector had
/// closed meanwhile is sent again once on a new one; a batch that fails on a new one is dropped.
final class OTLPHTTPClient: Sendable {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    struct TimedOut: Error, CustomStringConvertible {
        var description: String { "no answer within the export timeout" }
    }

    let url: TracingConfiguration.Endpoint
    let headers: [(String, String)]
    /// Made once (the CA file read once), for an `https` endpoint.
    let tls: NIOSSLContext?
    let timeout: Duration
    typealias Connection = (channel: any Channel, reader: NIOLoopBound<StatusReader>)
    /// The connection kept from the last batch, while the collector keeps it open.
    private let kept = Mutex<Connection?>(nil)

    init(url: TracingConfiguration.Endpoint, headers: [(String, String)], caFile: String?, timeout: Duration) throws {
        self.url = url
        self.headers = headers
        self.timeout = timeout
        if url.secure {
            var configuration = TLSConfiguration.makeClientConfiguration()
            if let caFile { configuration.trustRoots = .file(caFile) }
            tls = try NIOSSLContext(configuration: configuration)
        } else {
            tls = nil
        }
    }

    /// The answer's status to `body`, POSTed to the endpoint.
    func post(_ body: ByteBuffer) async throws -> Int {
        if let kept = kept.withLock({ $0.take() }), kept.channel.isActive {
            do {
                return try await post(body, on: kept)
            } catch let error as TimedOut {
                // The collector may have taken it: not sent twice.
                kept.channel.close(promise: nil)
                throw error
            } catch {
                kept.channel.close(promise: nil)
            }
        }
        let fresh = try await connect()
        do {
            return try await post(body, on: fresh)
        } catch {
            fresh.channel.close(promise: nil)
            throw error
        }
    }

    func close() {
        kept.withLock { $0.take() }?.channel.close(promise: nil)
    }

    private var limit: TimeAmount { TimeAmount(timeout) }

    private func connect() async throws -> Connection {
        let (tls, host) = (self.tls, url.host)
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(limit)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls {
                        // A name is sent for SNI; an address is not (TLS does not allow one).
                        let name = host.contains(":") || host.allSatisfy({ $0.isNumber || $0 == "." }) ? nil : host
                        try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: tls, serverHostname: name))
                    }
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(StatusReader())
                }
            }
            .connect(host: host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host, port: url.port).get()
        let reader = try await channel.eventLoop.submit {
            NIOLoopBound(try channel.pipeline.syncOperations.handler(type: StatusReader.self), eventLoop: channel.eventLoop)
        }.get()
        return (channel, reader)
    }

    /// The batch on `connection`, which is kept for the next when the answer leaves it open.
    private func post(_ body: ByteBuffer, on connection: Connection) async throws -> Int {
        let (channel, reader) = connection
        let (host, secure, path) = (url.host, url.secure, url.path)
        var fields = HTTPHeaders([("host", secure && url.port == 443 || !secure && url.port == 80 ? host : "\(host):\(url.port)"),
                                  ("content-type", "application/x-protobuf"), ("content-length", String(body.readableBytes)),
                                  ("user-agent", "attache/\(TracingConfiguration.version)")])
        for (name, value) in headers { fields.add(name: name, value: value) }
        let head = HTTPRequestHead(version: .http1_1, method: .POST, uri: path, headers: fields)
        let answer = channel.eventLoop.makePromise(of: StatusReader.Answer.self)
        let closing = channel.eventLoop.scheduleTask(in: limit) {
            answer.fail(TimedOut())
            channel.close(promise: nil)
        }
        defer { closing.cancel() }
        channel.eventLoop.execute {
            reader.value.expect(answer)
            channel.write(HTTPClientRequestPart.head(head), promise: nil)
            channel.write(HTTPClientRequestPart.body(.byteBuffer(body)), promise: nil)
            channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        }
        let result = try await answer.futureResult.get()
        if result.keepAlive { kept.withLock { $0 = connection } } else { channel.close(promise: nil) }
        return result.status
    }
}

/// The status of each answer, once it has all arrived, and whether the collector keeps the
/// connection open after it; the connection's end or an error before that fails the wait. Used on
/// the connection's event loop only.
final class StatusReader: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    struct Answer {
        var status: Int
        var keepAlive: Bool
    }

    private var waiting: EventLoopPromise<Answer>?
    private var head: HTTPResponseHead?

    /// The next answer completes `answer`.
    func expect(_ answer: EventLoopPromise<Answer>) {
        waiting = answer
        head = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): self.head = head
        case .body: break
        case .end:
            let answer = Answer(status: Int(head?.status.code ?? 0), keepAlive: head?.isKeepAlive ?? false)
            complete(.success(answer))
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        complete(.failure(error))
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        complete(.failure(OTLPHTTPClient.Failure(description: "the connection closed before the answer")))
        context.fireChannelInactive()
    }

    private func complete(_ result: Result<Answer, any Error>) {
        let waiting = self.waiting
        self.waiting = nil
        waiting?.completeWith(result)
    }
}
