/// What the origin does wrong, chosen per request by query parameters (`?delay=500&rate=2048`),
/// or per path by a config (`attache origin --faults FILE`: `{"/slow.jpg": "delay=2000&rate=4096"}`):
///
/// | parameter | effect |
/// |---|---|
/// | `delay=MS` | wait before sending headers |
/// | `status=N` | answer with status N (body: the file, or a short HTML error page for 4xx/5xx) |
/// | `type=MIME` | lie about Content-Type |
/// | `rate=BYTES_PER_S` | send the body at that bandwidth (a drip at small values) |
/// | `stall=1` | send headers, then never the body |
/// | `stall=N` or `stall=P%` | send that much of the body, then nothing more (connection left open) |
/// | `hang=1` | accept the request and never answer at all |
/// | `truncate=N` or `truncate=P%` | declare the full length, send that much, close |
/// | `reset=N` or `reset=P%` | send that much, then reset the connection |
/// | `length=N` | declare Content-Length N whatever the body is |
/// | `endless=1` | chunked body that never ends |
/// | `redirect=N` | a chain of N redirects back to the same path |
/// | `location=URL` | redirect once to URL |
/// | `encoding=NAME` | add `Content-Encoding: NAME`, body unchanged |
/// | `profile=3g\|lte\|wifi` | network profile: latency before headers and bandwidth |
public struct OriginFault: Sendable, Equatable {
    /// A point in the body: a byte count, or a share of the body (`50%`: the middle).
    public enum BodyMark: Sendable, Equatable {
        case bytes(Int)
        case percent(Int)

        init?(_ text: String) {
            if text.hasSuffix("%") {
                guard let p = Int(text.dropLast()), (0...100).contains(p) else { return nil }
                self = .percent(p)
            } else {
                guard let n = Int(text), n >= 0 else { return nil }
                self = .bytes(n)
            }
        }

        public func offset(in length: Int) -> Int {
            switch self {
            case .bytes(let n): return min(n, length)
            case .percent(let p): return length * p / 100
            }
        }
    }

    public var delayMs = 0
    public var status = 200
    public var contentType: String?
    public var bytesPerSecond: Int?
    /// Where the body stops coming (the connection stays open): `.bytes(0)` is `stall=1`.
    public var stallAt: BodyMark?
    public var hang = false
    public var truncateAt: BodyMark?
    public var resetAt: BodyMark?
    public var declaredLength: Int?
    public var endless = false
    public var redirects = 0
    public var location: String?
    public var encoding: String?

    public init() {}

    /// Latency and bandwidth of the named network profiles.
    public static let profiles: [String: (latencyMs: Int, bytesPerSecond: Int)] = [
        "3g": (300, 96 * 1024), "lte": (60, 1_500 * 1024), "wifi": (15, 5_000 * 1024),
    ]

    public init(query: [String: String]) {
        if let p = query["profile"].flatMap({ Self.profiles[$0] }) {
            delayMs = p.latencyMs
            bytesPerSecond = p.bytesPerSecond
        }
        if let v = query["delay"].flatMap(Int.init) { delayMs = v }
        if let v = query["status"].flatMap(Int.init) { status = v }
        contentType = query["type"]
        if let v = query["rate"].flatMap(Int.init), v > 0 { bytesPerSecond = v }
        // `stall=1` predates byte counts: it stalls before the first byte.
        stallAt = query["stall"] == "1" ? .bytes(0) : query["stall"].flatMap(BodyMark.init)
        hang = query["hang"] == "1"
        truncateAt = query["truncate"].flatMap(BodyMark.init)
        resetAt = query["reset"].flatMap(BodyMark.init)
        declaredLength = query["length"].flatMap(Int.init)
        endless = query["endless"] == "1"
        redirects = query["redirect"].flatMap(Int.init) ?? 0
        location = query["location"]
        encoding = query["encoding"]
    }
}

extension OriginFault {
    /// `delay=500&rate=2048` → `["delay": "500", "rate": "2048"]`.
    public static func parameters(_ query: String) -> [String: String] {
        var out: [String: String] = [:]
        for pair in query.split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            out[String(kv[0])] = kv.count == 2 ? String(kv[1]) : ""
        }
        return out
    }
}
