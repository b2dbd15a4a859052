import ServiceContextModule
import Synchronization

/// Where a span sits in its trace, as W3C Trace Context carries it between processes: the trace's
/// id, the span's, whether the trace is sampled, and the vendors' `tracestate`.
public struct TraceContext: Sendable, Hashable {
    public var traceHigh: UInt64
    public var traceLow: UInt64
    public var spanID: UInt64
    public var sampled: Bool
    public var traceState: String?
    /// Read from a caller (a `traceparent`), not made here.
    public var isRemote: Bool

    /// The 32 hex digits of the trace id.
    public var traceID: String { Self.hex(traceHigh) + Self.hex(traceLow) }
    /// The 16 hex digits of the span id.
    public var spanIDText: String { Self.hex(spanID) }

    /// `00-TRACE-SPAN-FLAGS`.
    public var traceparent: String { "00-\(traceID)-\(spanIDText)-\(sampled ? "01" : "00")" }

    public init(traceHigh: UInt64, traceLow: UInt64, spanID: UInt64, sampled: Bool, traceState: String? = nil, isRemote: Bool = false) {
        self.traceHigh = traceHigh
        self.traceLow = traceLow
        self.spanID = spanID
        self.sampled = sampled
        self.traceState = traceState
        self.isRemote = isRemote
    }

    /// A `traceparent` as W3C Trace Context level 1 reads it: version, trace id, parent id and
    /// flags, lower-case hex, neither id all zeros; a version above 00 may carry more after the
    /// flags, version ff is invalid. Nil for anything else (the request then starts a trace).
    public init?(traceparent: String) {
        let bytes = Array(traceparent.utf8)
        guard bytes.count >= 55, bytes[2] == 0x2D, bytes[35] == 0x2D, bytes[52] == 0x2D,
              let version = Self.parse(bytes[0..<2]), version != 0xFF,
              version != 0 || bytes.count == 55, bytes.count == 55 || bytes[55] == 0x2D,
              let high = Self.parse(bytes[3..<19]), let low = Self.parse(bytes[19..<35]), high | low != 0,
              let span = Self.parse(bytes[36..<52]), span != 0, let flags = Self.parse(bytes[53..<55])
        else { return nil }
        self.init(traceHigh: high, traceLow: low, spanID: span, sampled: flags & 1 == 1, isRemote: true)
    }

    /// Lower-case hex digits, at most 16 of them.
    private static func parse(_ digits: ArraySlice<UInt8>) -> UInt64? {
        var value: UInt64 = 0
        for d in digits {
            switch d {
            case 0x30...0x39: value = value << 4 | UInt64(d - 0x30)
            case 0x61...0x66: value = value << 4 | UInt64(d - 0x61 + 10)
            default: return nil
            }
        }
        return value
    }

    static func hex(_ value: UInt64) -> String {
        let digits = Array("0123456789abcdef".utf8)
        return String(unsafeUninitializedCapacity: 16) { out in
            for i in 0..<16 { out[i] = digits[Int(value >> (60 - 4 * UInt64(i)) & 0xF)] }
            return 16
        }
    }
}

private enum TraceContextKey: ServiceContextKey {
    typealias Value = TraceContext
    static var nameOverride: String? { "attache-trace-context" }
}

extension TraceContext {
    /// The span the current work is in: the request's server span, or the caller's place read from
    /// its request's or message's `traceparent`; nil outside one, or with traces off. Its parent
    /// of a payload's span and its log lines' ids. A task-local of its own, not a value in
    /// `ServiceContext.current`: each value set in one is boxed in a dictionary under its key and
    /// read back through a cast, which cost a traced request more than writing one of its spans.
    @TaskLocal public static var current: TraceContext?
}

extension ServiceContext {
    /// The span this context is in (its own, or a caller's read from a `traceparent`).
    public var traceContext: TraceContext? {
        get { self[TraceContextKey.self] }
        set { self[TraceContextKey.self] = newValue }
    }
}

/// Trace and span ids: random, from a generator seeded once by the system's, so that a span costs
/// no system call.
final class IDGenerator: Sendable {
    private let state: Mutex<(UInt64, UInt64, UInt64, UInt64)>

    init() {
        var system = SystemRandomNumberGenerator()
        state = Mutex((system.next() | 1, system.next(), system.next(), system.next()))
    }

    /// xoshiro256**, never 0.
    func next() -> UInt64 {
        state.withLock { Self.step(&$0) }
    }

    /// A new trace's two halves and its first span's id, drawn under one lock.
    func trace() -> (high: UInt64, low: UInt64, span: UInt64) {
        state.withLock { s in (Self.step(&s), Self.step(&s), Self.step(&s)) }
    }

    @inline(__always)
    private static func step(_ s: inout (UInt64, UInt64, UInt64, UInt64)) -> UInt64 {
        while true {
            let result = rotate(s.1 &* 5, 7) &* 9
            let t = s.1 << 17
            s.2 ^= s.0
            s.3 ^= s.1
            s.1 ^= s.2
            s.0 ^= s.3
            s.2 ^= t
            s.3 = rotate(s.3, 45)
            if result != 0 { return result }
        }
    }

    private static func rotate(_ x: UInt64, _ k: UInt64) -> UInt64 { x << k | x >> (64 - k) }
}
