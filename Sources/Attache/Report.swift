import AttachePayload

/// Milliseconds spent in each stage of one attachment (each stage on its own, not cumulative),
/// and when the fetch and the later stages started, in ms after the payload arrived.
public struct StageTimings: Sendable, Equatable {
    public var dns = 0.0, connect = 0.0, tls = 0.0, firstByte = 0.0, download = 0.0
    public var inspect = 0.0, render = 0.0, transcode = 0.0, store = 0.0
    public var fetchStart: Double?, inspectStart: Double?, renderStart: Double?, transcodeStart: Double?, storeStart: Double?
    public init() {}

    /// The stages in order, with their start (ms after the payload arrived) and length.
    public var spans: [(stage: String, start: Double, length: Double)] {
        var out: [(String, Double, Double)] = []
        if let t = fetchStart {
            var at = t
            for (name, length) in [("dns", dns), ("connect", connect), ("tls", tls), ("first_byte", firstByte), ("download", download)] {
                if length > 0 { out.append((name, at, length)) }
                at += length
            }
        }
        for (name, start, length) in [("inspect", inspectStart, inspect), ("render", renderStart, render),
                                      ("transcode", transcodeStart, transcode), ("store", storeStart, store)] {
            if let start, length > 0 { out.append((name, start, length)) }
        }
        return out
    }

    var json: JSONValue {
        .object(JSONObject([
            "dns": .milliseconds(dns), "connect": .milliseconds(connect), "tls": .milliseconds(tls),
            "first_byte": .milliseconds(firstByte), "download": .milliseconds(download), "inspect": .milliseconds(inspect),
            "render": .milliseconds(render), "transcode": .milliseconds(transcode), "store": .milliseconds(store),
            "started": .object(JSONObject([
                "fetch": fetchStart.map(JSONValue.milliseconds) ?? .null, "inspect": inspectStart.map(JSONValue.milliseconds) ?? .null,
                "render": renderStart.map(JSONValue.milliseconds) ?? .null, "transcode": transcodeStart.map(JSONValue.milliseconds) ?? .null,
                "store": storeStart.map(JSONValue.milliseconds) ?? .null,
            ])),
        ]))
    }
}

/// What happened to one media request.
public struct AttachmentReport: Sendable, Equatable {
    public var id: String
    public var source: String
    public var outcome: AttachmentOutcome
    public var reason: Reason?
    public var message: String?
    /// Tells failures of one reason apart where it matters.
    public var detail: FailureDetail?
    public var kind: MediaKind?
    public var format: MediaFormat?
    public var bytes: Int?
    public var httpStatus: Int?
    public var connectedIP: String?
    public var redirects: Int?
    /// The format the media came in when what was attached is a conversion (HEIC, WebP, …).
    public var convertedFrom: MediaFormat?
    /// Where the conversion of a movie or sound into one iOS plays stood.
    public var conversion: Conversion?

    /// The movie or sound was still being converted when the payload went out (its poster, or
    /// nothing, attached instead).
    public var conversionPending: Bool {
        if case .pending? = conversion { return true }
        return false
    }
    /// The Android copy's URL, for an FCM send request.
    public var androidURL: String?
    /// How the result came out of the cache, when one is in use.
    public var cache: CacheEvent?
    public var timings = StageTimings()

    public init(id: String, source: String, outcome: AttachmentOutcome = .pending) {
        self.id = id
        self.source = source
        self.outcome = outcome
    }

    public var json: JSONValue {
        var o = JSONObject()
        o["id"] = .string(id)
        o["source"] = .string(source)
        o["outcome"] = .string(outcome.description)
        o["reason"] = reason.map { .string($0.description) } ?? .null
        if let message { o["message"] = .string(message) }
        if let detail { o["detail"] = .string(detail.rawValue) }
        o["kind"] = kind.map { .string($0.rawValue) } ?? .null
        o["format"] = format.map { .string($0.rawValue) } ?? .null
        o["bytes"] = bytes.map(JSONValue.int) ?? .null
        if let convertedFrom { o["converted_from"] = .string(convertedFrom.rawValue) }
        if let conversion { o["conversion"] = conversion.json }
        if let androidURL { o["android_url"] = .string(androidURL) }
        if let httpStatus { o["http_status"] = .int(httpStatus) }
        if let connectedIP { o["connected_ip"] = .string(connectedIP) }
        if let redirects { o["redirects"] = .int(redirects) }
        if let cache { o["cache"] = .string(cache.rawValue) }
        o["timings"] = timings.json
        return .object(o)
    }
}

/// Tells failures of one reason apart where it matters.
public enum FailureDetail: String, Sendable, Equatable, CustomStringConvertible {
    /// The decoder process died on the file (a crash, a forbidden call), rather than refusing it.
    case decoderCrashed = "decoder-crashed"
    /// Decoding used more CPU than one job may.
    case decoderCPULimit = "decoder-cpu-limit"
    /// No decoder process could be started.
    case decoderUnavailable = "decoder-unavailable"

    public var description: String { rawValue }
}

/// Where the conversion of a movie or sound into a file iOS plays stood when the payload went out.
public enum Conversion: Sendable, Equatable {
    /// Still being made; the poster frame was attached meanwhile, or nothing was.
    case pending(posterAttached: Bool)
    /// Made: how (method, encoders, the seconds kept when cut), as the transcoder records it.
    case made(JSONValue)

    /// `{"pending": true}` (with `"attached": "poster"`), or the transcoder's record.
    public var json: JSONValue {
        switch self {
        case .pending(let poster):
            var o = JSONObject(["pending": .bool(true)])
            if poster { o["attached"] = .string("poster") }
            return .object(o)
        case .made(let record):
            return record
        }
    }
}

/// How a value came out of the cache.
public enum CacheEvent: String, Sendable {
    /// Already there.
    case hit
    /// Computed by this caller.
    case miss
    /// Computed by another caller at the same time, and waited for (single-flight).
    case shared
    /// Not in this process's cache, but in the store's shared results (another replica made it).
    case store
}

/// The report of one payload: outcome, reason, time, and each attachment.
extension AttachmentReport {
    /// Fetched for this payload (no cache, or a miss it computed itself).
    public var wasFetched: Bool {
        cache.map { $0 == .miss } ?? true
    }
}

public struct EnrichReport: Sendable {
    public var outcome: Outcome
    public var reason: Reason?
    public var elapsedMs: Double
    public var deadlineMs: Double
    public var payloadBytes: Int
    public var attachments: [AttachmentReport]

    public init(outcome: Outcome, reason: Reason?, elapsedMs: Double, deadlineMs: Double, payloadBytes: Int, attachments: [AttachmentReport]) {
        self.outcome = outcome
        self.reason = reason
        self.elapsedMs = elapsedMs
        self.deadlineMs = deadlineMs
        self.payloadBytes = payloadBytes
        self.attachments = attachments
    }

    public var json: JSONValue {
        .object(JSONObject([
            "outcome": .string(outcome.rawValue),
            "reason": reason.map { .string($0.description) } ?? .null,
            "elapsed_ms": .milliseconds(elapsedMs),
            "deadline_ms": .milliseconds(deadlineMs),
            "payload_bytes": .int(payloadBytes),
            "attachments": .array(attachments.map(\.json)),
        ]))
    }

    /// Bytes this payload's own fetches downloaded (not what the cache or another replica gave
    /// it): what a tenant's daily quota counts.
    public var downloadedBytes: Int {
        attachments.filter(\.wasFetched).reduce(0) { $0 + ($1.bytes ?? 0) }
    }

    /// `enriched  2/2 attached  231 ms  1830 bytes` style one-liner for terminals.
    public var summary: String {
        let attached = attachments.filter { $0.outcome == .attached }.count
        var line = "\(outcome.rawValue)"
        if let reason { line += " (\(reason))" }
        line += "  \(attached)/\(attachments.count) attached  \(Int(elapsedMs.rounded())) ms  \(payloadBytes) bytes"
        // Why, in words, when the reason alone does not say it ("fetch-failed": which failure).
        if let failed = attachments.first(where: { $0.outcome == .failed && $0.message != nil }), let message = failed.message {
            line += "  (\(failed.id): \(message))"
        }
        return line
    }
}

extension JSONValue {
    /// Milliseconds with one decimal.
    public static func milliseconds(_ value: Double) -> JSONValue {
        .double((value * 10).rounded() / 10)
    }
}

