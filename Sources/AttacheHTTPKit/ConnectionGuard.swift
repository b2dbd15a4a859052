import HTTPTypes
import NIOCore
import NIOHTTPTypes
import Synchronization

/// How long a connection may take over each part of HTTP/1.1, how long it may sit idle, and how
/// many may be open: what `serve` and `relay` each default and read from the same settings.
public struct ConnectionLimits: Sendable {
    /// From the connection's start until a request's headers are in.
    public var headerTimeout: Duration
    /// From the headers until the whole body is in; and, while an answer is written, the longest
    /// its client may take none of it (a client that stops reading).
    public var bodyTimeout: Duration
    /// Between a response and the next request (keep-alive); nil: open until the client closes it.
    public var idleTimeout: Duration?
    /// Connections open at once; past that a request is answered 503 and its connection closed.
    public var maxConnections: Int

    public init(headerTimeout: Duration = .seconds(10), bodyTimeout: Duration = .seconds(10),
                idleTimeout: Duration? = .seconds(60), maxConnections: Int = 4096) {
        self.headerTimeout = headerTimeout
        self.bodyTimeout = bodyTimeout
        self.idleTimeout = idleTimeout
        self.maxConnections = maxConnections
    }
}

/// The open connections, shared by every connection's guard and by the handlers: how many there
/// are, and for each one a way for a request's work to learn that its client has gone.
public final class Connections: Sendable {
    private let open = Mutex<[ObjectIdentifier: ConnectionWatch]>([:])

    public init() {}

    /// Registers a connection; returns its watch and how many are open with it.
    func enter(_ channel: any Channel) -> (ConnectionWatch, Int) {
        let watch = ConnectionWatch()
        let count = open.withLock { $0[ObjectIdentifier(channel)] = watch; return $0.count }
        return (watch, count)
    }

    func leave(_ channel: any Channel) {
        open.withLock { $0.removeValue(forKey: ObjectIdentifier(channel)) }?.clientGone()
    }

    public func watch(for channel: any Channel) -> ConnectionWatch? {
        open.withLock { $0[ObjectIdentifier(channel)] }
    }
}

/// Tells a request's work that its client has gone (closed or reset the connection), and when
/// its request arrived.
public final class ConnectionWatch: Sendable {
    private struct State {
        var gone = false
        /// When the latest request's head was read: the request being answered, as HTTP/1.1
        /// clients send one at a time (a pipelined one would count from a later head's).
        var arrival: ContinuousClock.Instant?
        /// What cancels each operation running for this connection's requests.
        var running: [UInt64: @Sendable () -> Void] = [:]
        var next: UInt64 = 0
    }
    private let state = Mutex(State())

    func arrived() {
        let now = ContinuousClock.now
        state.withLock { $0.arrival = now }
    }

    /// When the request being answered arrived: its deadline counts from there, not from when
    /// the application got to it (hundreds of requests arriving together wait their turn).
    public var arrival: ContinuousClock.Instant? { state.withLock { $0.arrival } }

    func clientGone() {
        let running = state.withLock { s in
            s.gone = true
            defer { s.running = [:] }
            return Array(s.running.values)
        }
        for cancel in running { cancel() }
    }

    /// Runs `operation`, cancelled if the client goes away first; nil in that case. The
    /// operation runs in a task of its own, which the client's going cancels (no task group,
    /// no task waiting for the client per request).
    public func run<T: Sendable>(_ operation: @escaping @Sendable () async -> T) async -> T? {
        let task = Task { await operation() }
        let id = state.withLock { s -> UInt64? in
            guard !s.gone else { return nil }
            s.next &+= 1
            s.running[s.next] = { task.cancel() }
            return s.next
        }
        guard let id else {
            task.cancel()
            _ = await task.value
            return nil
        }
        let value = await withTaskCancellationHandler { await task.value } onCancel: { task.cancel() }
        // Gone meanwhile: its entry was taken, and the operation cancelled.
        let gone = state.withLock { $0.running.removeValue(forKey: id) == nil }
        return gone ? nil : value
    }
}

/// What a connection is doing, and what a guard does about it: a state machine without I/O.
struct ConnectionGuardStateMachine {
    enum State: Equatable {
        /// No request yet, or between requests; `first` tells which timeout applies.
        case waitingForHead(first: Bool)
        case readingBody
        /// The request is in; the application is answering.
        case answering
        case refused
        case closed
    }

    enum Action: Equatable {
        case arm(Duration)
        case disarm
        case refuse
        case close
        case none
    }

    let limits: ConnectionLimits
    private(set) var state = State.waitingForHead(first: true)
    /// Requests read but not yet answered (pipelining may put several in flight).
    private var unanswered = 0
    /// For each unanswered request, oldest first: whether it asked to close the connection.
    private var closing: [Bool] = []
    /// Answering, and the socket takes nothing more (see `writability`).
    private var stalled = false

    init(limits: ConnectionLimits) {
        self.limits = limits
    }

    mutating func opened(overCapacity: Bool) -> Action {
        if overCapacity { state = .refused }
        return .arm(limits.headerTimeout)
    }

    mutating func read(_ part: HTTPRequestPart) -> Action {
        switch (state, part) {
        case (.refused, .head):
            return .refuse
        case (.refused, _), (.closed, _):
            return .none
        case (_, .head(let request)):
            closing.append(Self.asksToClose(request))
            unanswered += 1
            state = .readingBody
            return .arm(limits.bodyTimeout)
        case (_, .end):
            state = .answering
            return .disarm
        case (_, .body):
            return .none
        }
    }

    /// The answer to the oldest unanswered request, saying `Connection: close` when that request
    /// asked for it (RFC 9112 §9.6): the connection closes after it, and a client that reads a
    /// keep-alive answer and then the close would count a read error for each (wrk does).
    func head(_ response: HTTPResponse) -> HTTPResponse {
        guard closing.first == true, response.headerFields[.connection] == nil else { return response }
        var response = response
        response.headerFields[.connection] = "close"
        return response
    }

    static func asksToClose(_ request: HTTPRequest) -> Bool {
        request.headerFields[values: .connection].contains { value in
            value.split(separator: ",").contains { token in
                token.filter { $0 != " " && $0 != "\t" }.lowercased() == "close"
            }
        }
    }

    /// Whether the answer being written is the last on this connection (its request asked to close).
    var answeringLast: Bool { closing.first == true }

    mutating func wroteEnd() -> Action {
        if !closing.isEmpty { closing.removeFirst() }
        unanswered = max(0, unanswered - 1)
        guard unanswered == 0, state == .answering else { return .none }
        state = .waitingForHead(first: false)
        stalled = false
        return limits.idleTimeout.map { .arm($0) } ?? .disarm
    }

    /// The client closed its side: with a request unanswered nobody is left to read the answer,
    /// so the connection is closed and the work for it cancelled (as nginx does, status 499).
    mutating func inputClosed() -> Action {
        guard unanswered > 0 || state == .readingBody else { return .none }
        state = .closed
        return .close
    }

    /// The socket stopped taking what is written, or took it again, while an answer is written:
    /// a client that stops reading (an attachment's file, say) holds its connection, and the
    /// task writing to it, for no longer than the body timeout without progress.
    mutating func writability(_ writable: Bool) -> Action {
        guard state == .answering else { return .none }
        stalled = !writable
        return writable ? .disarm : .arm(limits.bodyTimeout)
    }

    mutating func timedOut() -> Action {
        switch state {
        case .waitingForHead, .readingBody, .refused:
            state = .closed
            return .close
        case .answering where stalled:
            state = .closed
            return .close
        case .answering, .closed:
            return .none
        }
    }
}

/// Closes connections that take too long to send a request or to take an answer, or that sit
/// idle, and refuses requests past the connection cap with 503, so that slow or idle clients
/// cannot use up the process's file descriptors and silence the service for everyone (no token
/// is needed to open a socket).
/// Sits after the HTTP/1.1 decoder, so it sees request parts; Hummingbird's own idle timeout
/// is reset by every byte, which a client dripping a request line never stops sending.
public final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    public typealias InboundIn = HTTPRequestPart
    public typealias InboundOut = HTTPRequestPart
    public typealias OutboundIn = HTTPResponsePart
    public typealias OutboundOut = HTTPResponsePart

    private var machine: ConnectionGuardStateMachine
    private let connections: Connections
    private var watch: ConnectionWatch?
    /// When the limit armed last runs out; nil: none is armed.
    private var deadline: NIODeadline?
    /// The task that checks `deadline`, and when it runs. A request arms a limit three times
    /// (its body's, none, the idle wait's); scheduling and cancelling a task each time cost 5 %
    /// of a cached enrichment's instructions. So a task that runs sooner than a new deadline
    /// is kept, and when it runs it waits again for the deadline it finds.
    private var timer: (task: Scheduled<Void>, runs: NIODeadline)?

    public init(limits: ConnectionLimits, connections: Connections) {
        machine = ConnectionGuardStateMachine(limits: limits)
        self.connections = connections
    }

    public func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { opened(context) }
    }

    public func channelActive(context: ChannelHandlerContext) {
        opened(context)
        context.fireChannelActive()
    }

    private func opened(_ context: ChannelHandlerContext) {
        guard watch == nil else { return }
        let (watch, open) = connections.enter(context.channel)
        self.watch = watch
        perform(machine.opened(overCapacity: open > machine.limits.maxConnections), context)
    }

    public func channelInactive(context: ChannelHandlerContext) {
        leave(context)
        context.fireChannelInactive()
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        leave(context)
    }

    private func leave(_ context: ChannelHandlerContext) {
        disarm()
        if watch != nil {
            watch = nil
            connections.leave(context.channel)
        }
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        if case .head = part { watch?.arrived() }
        let action = machine.read(part)
        if machine.state == .refused || machine.state == .closed {
            perform(action, context)
            return  // a refused connection's requests never reach the application
        }
        perform(action, context)
        context.fireChannelRead(data)
    }

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let response):
            context.write(wrapOutboundOut(.head(machine.head(response))), promise: promise)
        case .end:
            let last = machine.answeringLast
            perform(machine.wroteEnd(), context)
            guard last else { return context.write(data, promise: promise) }
            // The connection closes once this answer is out, whatever else the request said
            // (`keep-alive, close`: close wins), as its Connection: close told the client.
            let written = context.eventLoop.makePromise(of: Void.self)
            let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
            written.futureResult.whenComplete { result in
                promise?.completeWith(result)
                bound.value.close(promise: nil)
            }
            context.write(data, promise: written)
        case .body:
            context.write(data, promise: promise)
        }
    }

    public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed {
            perform(machine.inputClosed(), context)
        }
        context.fireUserInboundEventTriggered(event)
    }

    public func channelWritabilityChanged(context: ChannelHandlerContext) {
        perform(machine.writability(context.channel.isWritable), context)
        context.fireChannelWritabilityChanged()
    }

    private func perform(_ action: ConnectionGuardStateMachine.Action, _ context: ChannelHandlerContext) {
        switch action {
        case .arm(let duration):
            arm(at: .now() + TimeAmount(duration), context)
        case .disarm:
            deadline = nil  // a task still scheduled finds nothing armed when it runs
        case .refuse:
            disarm()
            var fields = HTTPFields()
            fields[.connection] = "close"
            fields[.retryAfter] = "1"
            fields[.contentType] = "application/json"
            let body = ErrorResponse.body("too many connections")
            fields[.contentLength] = String(body.readableBytes)
            context.write(wrapOutboundOut(.head(HTTPResponse(status: .serviceUnavailable, headerFields: fields))), promise: nil)
            context.write(wrapOutboundOut(.body(body)), promise: nil)
            // The close runs on the loop that completes the write: the context stays on its loop.
            let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in bound.value.close(promise: nil) }
        case .close:
            disarm()
            watch?.clientGone()
            context.close(promise: nil)
        case .none:
            break
        }
    }

    private func arm(at deadline: NIODeadline, _ context: ChannelHandlerContext) {
        self.deadline = deadline
        if let timer, timer.runs <= deadline { return }
        timer?.task.cancel()
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let task = context.eventLoop.scheduleTask(deadline: deadline) {
            let (handler, context) = loopBound.value
            handler.timer = nil
            guard let deadline = handler.deadline else { return }
            guard deadline <= .now() else { return handler.arm(at: deadline, context) }
            handler.deadline = nil
            handler.perform(handler.machine.timedOut(), context)
        }
        timer = (task, deadline)
    }

    private func disarm() {
        deadline = nil
        timer?.task.cancel()
        timer = nil
    }
}
