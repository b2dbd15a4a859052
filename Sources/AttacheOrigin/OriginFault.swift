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
/// | `hang=1` | accept the request and never answer at all |
/// | `truncate=N` | declare the full length, send N bytes, close |
/// | `reset=N` | send N bytes, then reset the connection |
/// | `length=N` | declare Content-Length N whatever the body is |
/// | `endless=1` | chunked body that never ends |
/// | `redirect=N` | a chain of N redirects back to the same path |
/// | `location=URL` | redirect once to URL |
/// | `encoding=NAME` | add `Content-Encoding: NAME`, body unchanged |
/// | `profile=3g\|lte\|wifi` | network profile: latency before headers and bandwidth |
public struct OriginFault: Sendable, Equatable {
    public var delayMs = 0
    public var status = 200
    public var contentType: String?
    public var bytesPerSecond: Int?
    public var stall = false
    public var hang = false
    public var truncateAt: Int?
    public var resetAt: Int?
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
        stall = query["stall"] == "1"
        hang = query["hang"] == "1"
        truncateAt = query["truncate"].flatMap(Int.init)
        resetAt = query["reset"].flatMap(Int.init)
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
