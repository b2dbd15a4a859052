// The one Swift file that talks to nats.c, through Sources/CNats. Every call here blocks (nats.c
// waits on its own threads): callers run them on a `BlockingPool`, never on a cooperative thread.
internal import CNats
import AttacheSupport
#if canImport(Glibc)
import Glibc
#endif

/// A NATS call that failed: which one (what a caller acts on: a failed connect stops the start, a
/// failed publish leaves the message unacked for redelivery), and nats.c's words.
public struct NATSError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable {
        case connect, stream, subscribe, publish, fetch
    }

    public let code: Code
    /// nats.c's message.
    public let message: String

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}

/// Runs a shim call that reports failure with a message.
private func check(_ code: NATSError.Code, _ body: (UnsafeMutablePointer<CChar>, Int) -> Int32) throws {
    var message = [CChar](repeating: 0, count: 512)
    let failed = message.withUnsafeMutableBufferPointer { body($0.baseAddress!, $0.count) } != 0
    if failed {
        throw NATSError(code, String(cBuffer: message))
    }
}

/// How to reach the server, as the NATS client offers it.
public struct NATSOptions: Sendable {
    /// `nats://host:port`, several separated by commas.
    public var url: String
    public var user: String?
    public var password: String?
    public var token: String?
    /// A `.creds` file (JWT and NKey seed).
    public var credentials: String?
    /// A CA file (TLS with that CA).
    public var ca: String?
    /// TLS with the system's CAs.
    public var tls = false
    public var name = "attache-worker"
    public var connectTimeout: Duration = .seconds(5)

    public init(url: String) {
        self.url = url
    }
}

/// A connection and its JetStream context. nats.c's calls are thread-safe.
public final class NATSConnection: @unchecked Sendable {
    private let handle: OpaquePointer

    public init(_ options: NATSOptions) throws {
        var made: OpaquePointer?
        try withOptionalCStrings([options.url, options.user, options.password, options.token, options.credentials,
                                  options.ca, options.name]) { s in
            var o = attache_nats_options(url: s[0], user: s[1], password: s[2], token: s[3], credentials: s[4], ca: s[5],
                                         tls: options.tls, name: s[6], timeout_ms: Int64(options.connectTimeout.milliseconds))
            try check(.connect) { attache_nats_connect(&made, &o, $0, $1) }
        }
        guard let made else { throw NATSError(.connect, "connect: no connection") }
        handle = made
    }

    deinit {
        attache_nats_close(handle)
    }

    /// Connected now (not reconnecting, not closed).
    public var isConnected: Bool { attache_nats_connected(handle) }

    /// Makes the stream when it is missing; returns its duplicate window, as it is.
    public func ensureStream(_ name: String, subject: String, duplicateWindow: Duration) throws -> Duration {
        var window: Int64 = 0
        try check(.stream) { attache_nats_ensure_stream(handle, name, subject, duplicateWindow.nanoseconds, &window, $0, $1) }
        return .nanoseconds(window)
    }

    public func pullSubscribe(stream: String, subject: String, durable: String, ackWait: Duration, maxDeliver: Int,
                              maxAckPending: Int) throws -> NATSSubscription {
        var sub: OpaquePointer?
        try check(.subscribe) {
            attache_nats_pull_subscribe(handle, &sub, stream, subject, durable, ackWait.nanoseconds, Int64(maxDeliver),
                                        Int64(maxAckPending), $0, $1)
        }
        guard let sub else { throw NATSError(.subscribe, "pull subscribe: no subscription") }
        return NATSSubscription(sub, connection: self)
    }

    /// Publishes and waits for the stream's acknowledgement; returns whether the stream already
    /// had a message with this `Nats-Msg-Id` (and dropped this one).
    public func publish(_ subject: String, _ data: [UInt8], headers: [(String, String)], timeout: Duration) throws -> Bool {
        var duplicate = false
        let flat = headers.flatMap { [$0.0, $0.1] }
        try withOptionalCStrings(flat) { pointers in
            let strings = pointers.map { UnsafePointer($0) }
            try strings.withUnsafeBufferPointer { list in
                try data.withUnsafeBytes { bytes in
                    try check(.publish) {
                        attache_nats_publish(handle, subject, bytes.baseAddress, Int32(bytes.count), list.baseAddress,
                                             Int32(headers.count), Int64(timeout.milliseconds), &duplicate, $0, $1)
                    }
                }
            }
        }
        return duplicate
    }
}

/// A durable pull subscription. Leaving it does not delete the consumer the workers share.
public final class NATSSubscription: @unchecked Sendable {
    private let handle: OpaquePointer
    /// Kept alive while the subscription is.
    private let connection: NATSConnection

    init(_ handle: OpaquePointer, connection: NATSConnection) {
        self.handle = handle
        self.connection = connection
    }

    deinit {
        attache_nats_unsubscribe(handle)
    }

    /// Up to `batch` messages; none when nothing came within `timeout`.
    public func fetch(batch: Int, timeout: Duration) throws -> [NATSMessage] {
        var out = [OpaquePointer?](repeating: nil, count: max(1, batch))
        var count: Int32 = 0
        try check(.fetch) { attache_nats_fetch(handle, Int32(max(1, batch)), Int64(timeout.milliseconds), &out, &count, $0, $1) }
        return out.prefix(Int(count)).compactMap { $0.map { NATSMessage($0, connection: connection) } }
    }
}

/// One message from the stream, freed when the last reference goes.
public final class NATSMessage: @unchecked Sendable {
    private let handle: OpaquePointer
    private let connection: NATSConnection

    /// The headers as they arrived; nil when nats.c's message could not be read that way (then
    /// nats.c's own parse answers, which misreads empty values).
    private let headers: NATSHeaders?

    init(_ handle: OpaquePointer, connection: NATSConnection) {
        self.handle = handle
        self.connection = connection
        var block: UnsafePointer<CChar>?
        var length: Int32 = 0
        if attache_nats_msg_header_block(handle, &block, &length) == 0 {
            headers = block.map { NATSHeaders(block: UnsafeRawBufferPointer(start: $0, count: Int(length))) ?? NATSHeaders() } ?? NATSHeaders()
        } else {
            headers = nil
        }
    }

    deinit {
        attache_nats_msg_free(handle)
    }

    /// Whether the headers were read from the block as it arrived (see `headers`).
    public var headersReadAsSent: Bool { headers != nil }

    public var data: [UInt8] {
        var length: Int32 = 0
        guard let bytes = attache_nats_msg_data(handle, &length), length > 0 else { return [] }
        return Array(UnsafeRawBufferPointer(start: bytes, count: Int(length)))
    }

    /// The first value of a header (an empty one is "").
    public func header(_ name: String) -> String? {
        if let headers { return headers.first(name) }
        return attache_nats_msg_header(handle, name).map { String(cString: $0) }
    }

    public struct Metadata: Sendable {
        public var streamSequence: UInt64
        /// 1 the first time; more when redelivered.
        public var delivered: UInt64
        /// Messages still waiting for this consumer.
        public var pending: UInt64
        /// When the stream stored it, nanoseconds of Unix time (the server's clock).
        public var timestampNs: Int64
    }

    public var metadata: Metadata? {
        var m = attache_nats_meta()
        guard attache_nats_msg_meta(handle, &m) == 0 else { return nil }
        return Metadata(streamSequence: m.stream_sequence, delivered: m.delivered, pending: m.pending, timestampNs: m.timestamp_ns)
    }

    /// Done with: the stream will not deliver it again (the ack itself is not waited for: lost,
    /// it is a redelivery, whose republish the output stream drops by its id).
    public func ack() { _ = attache_nats_ack(handle) }

    /// Not done: deliver it again after `delay`.
    public func nak(delay: Duration) { _ = attache_nats_nak(handle, Int64(delay.milliseconds)) }

    /// Still being worked on: the stream waits a whole ack wait again before delivering it again.
    public func inProgress() { _ = attache_nats_in_progress(handle) }
}

/// C strings for optional Swift strings, alive for `body`.
private func withOptionalCStrings<T>(_ strings: [String?], _ body: ([UnsafeMutablePointer<CChar>?]) throws -> T) rethrows -> T {
    let pointers: [UnsafeMutablePointer<CChar>?] = strings.map { $0.flatMap { strdup($0) } }
    defer { pointers.forEach { free($0) } }
    return try body(pointers)
}
