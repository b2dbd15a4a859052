import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import ServiceLifecycle
import Synchronization
import Tracing

/// The ended, sampled spans waiting for the exporter: at most `capacity` (past that a span is
/// dropped, and counted), handed over `batch` at a time.
final class SpanBuffer: Sendable {
    private let state = Mutex<(spans: [SpanRecord], dropped: Int)>(([], 0))
    let capacity: Int
    let batch: Int
    /// Each element asks the exporter to look: a full batch, a tick, a flush.
    let signals: AsyncStream<Void>
    private let signal: AsyncStream<Void>.Continuation

    init(capacity: Int, batch: Int) {
        self.capacity = max(1, capacity)
        self.batch = max(1, min(batch, capacity))
        (signals, signal) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    func append(_ span: SpanRecord) {
        let full = state.withLock { state in
            guard state.spans.count < capacity else {
                state.dropped += 1
                return false
            }
            state.spans.append(span)
            return state.spans.count == batch
        }
        if full { signal.yield() }
    }

    /// Up to a batch of the oldest spans, and how many were dropped since the last call.
    func take() -> (spans: [SpanRecord], dropped: Int) {
        state.withLock { state in
            let count = min(batch, state.spans.count)
            let spans = Array(state.spans.prefix(count))
            state.spans.removeFirst(count)
            defer { state.dropped = 0 }
            return (spans, state.dropped)
        }
    }

    func wake() { signal.yield() }
    func finish() { signal.finish() }
}

/// Sends the buffer's spans on: every `scheduleDelay`, and as soon as a batch is full; at a
/// graceful shutdown, what is left, then it returns. Each batch is one OTLP/HTTP request (or, to
/// the console, a line per span); a batch the collector refuses or does not answer in `timeout`
/// is dropped and logged, as the specification's batch processor drops it.
public struct SpanExporter: Service {
    let buffer: SpanBuffer
    let destination: TracingConfiguration.Destination
    let resource: [(String, String)]
    let scheduleDelay: Duration
    let timeout: Duration
    let logger: Logger

    public func run() async throws {
        // Made once; a TLS context that cannot be made fails each batch, as a collector not reached.
        let client = destination.url.map { url in
            Result { try OTLPHTTPClient(url: url, headers: destination.headers, caFile: destination.caFile, timeout: timeout) }
        }
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
            let (spans, dropped) = buffer.take()
            if dropped > 0 {
                logger.warning("spans dropped: the export queue was full", metadata: ["attache.spans_dropped": "\(dropped)"])
            }
            guard !spans.isEmpty else { return }
            guard let client else {
                for span in spans { print(ConsoleSpan(span).line) }
                continue
            }
            let body = OTLPEncoding.request(spans, resource: resource, scope: (name: "attache", version: TracingConfiguration.version))
            do {
                let status = try await client.get().post(body)
                if !(200..<300).contains(status) {
                    logger.warning("the trace collector refused a batch", metadata: ["attache.status": "\(status)", "attache.spans": "\(spans.count)"])
                }
            } catch {
                logger.warning("the trace collector was not reached", metadata: ["attache.error": "\(error)", "attache.spans": "\(spans.count)"])
            }
        }
    }
}

/// One span as the console exporter prints it.
private struct ConsoleSpan {
    let line: String

    init(_ span: SpanRecord) {
        var attributes: [String] = []
        for field in span.attributes { attributes.append("\(field.key)=\(Self.plain(field.value))") }
        let parent = span.parentSpanID.map { " parent=\(TraceContext.hex($0))" } ?? ""
        line = "span \(span.name) trace=\(span.trace.traceID) span=\(span.trace.spanIDText)\(parent) "
            + "duration_ms=\(Double(span.end - span.start) / 1_000_000) \(attributes.sorted().joined(separator: " "))"
    }

    private static func plain(_ value: SpanField.Value) -> String {
        switch value {
        case .string(let s): s
        case .int(let i): String(i)
        case .double(let d): String(d)
        case .bool(let b): String(b)
        case .array(let items): "[" + items.map(plain).joined(separator: ",") + "]"
        }
    }
}

/// One POST per batch to an OTLP/HTTP endpoint, on a connection of its own (a batch leaves every
/// few seconds), over TLS for `https`.
struct OTLPHTTPClient: Sendable {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    let url: TracingConfiguration.Endpoint
    let headers: [(String, String)]
    /// Made once (the CA file read once), for an `https` endpoint.
    let tls: NIOSSLContext?
    let timeout: Duration

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

    func post(_ body: ByteBuffer) async throws -> Int {
        let tls = self.tls
        let (host, secure, path) = (url.host, url.secure, url.path)
        let status = MultiThreadedEventLoopGroup.singleton.any().makePromise(of: Int.self)
        let limit = TimeAmount.nanoseconds(Int64(timeout.components.seconds) * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000)
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
                    try channel.pipeline.syncOperations.addHandler(StatusReader(status))
                }
            }
            .connect(host: host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host, port: url.port).get()
        defer { channel.close(promise: nil) }
        // Closed at the timeout, the connection ends the wait (the reader fails it).
        let closing = channel.eventLoop.scheduleTask(in: limit) {
            channel.close(promise: nil)
        }
        defer { closing.cancel() }
        var fields = HTTPHeaders([("host", secure && url.port == 443 || !secure && url.port == 80 ? host : "\(host):\(url.port)"),
                                  ("content-type", "application/x-protobuf"), ("content-length", String(body.readableBytes)),
                                  ("connection", "close"), ("user-agent", "attache/\(TracingConfiguration.version)")])
        for (name, value) in headers { fields.add(name: name, value: value) }
        channel.write(HTTPClientRequestPart.head(HTTPRequestHead(version: .http1_1, method: .POST, uri: path, headers: fields)), promise: nil)
        channel.write(HTTPClientRequestPart.body(.byteBuffer(body)), promise: nil)
        try await channel.writeAndFlush(HTTPClientRequestPart.end(nil)).get()
        return try await status.futureResult.get()
    }
}

/// The status of the answer, once it has all arrived; the connection's end or error before that
/// fails the wait. Used on the connection's event loop only.
private final class StatusReader: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    private let status: EventLoopPromise<Int>
    private var code: Int?
    private var done = false

    init(_ status: EventLoopPromise<Int>) {
        self.status = status
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): code = Int(head.status.code)
        case .body: break
        case .end: complete(.success(code ?? 0))
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        complete(.failure(error))
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        complete(.failure(OTLPHTTPClient.Failure(description: "the connection closed before the answer")))
    }

    private func complete(_ result: Result<Int, any Error>) {
        guard !done else { return }
        done = true
        status.completeWith(result)
    }
}
