import AttachePayload
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// Attache's log lines on stderr (stdout carries payloads): text as swift-log's
/// `StreamLogHandler` writes it (`2026-12-05T15:20:14+0000 info attache: key=value [source]
/// message`), or one JSON object per line for log shippers. Metadata is formatted only when a
/// line is written: the service's HTTP server sets a request id on every request's logger, and
/// `StreamLogHandler` formats its whole metadata at every such set (a description, a sort and a
/// join: 4 % of a cached enrichment's instructions) for lines that are rarely written.
public struct LogLineHandler: LogHandler {
    public enum Format: Sendable {
        case text, json
    }

    public let label: String
    public let format: Format
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    /// Metadata of the task the line is logged from (with traces on: the trace and span ids).
    public var metadataProvider: Logger.MetadataProvider?

    public init(label: String, format: Format, metadataProvider: Logger.MetadataProvider? = nil) {
        self.label = label
        self.format = format
        self.metadataProvider = metadataProvider
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        writeStderr(Array(line(for: event).utf8))
    }

    /// The line `event` is written as, its newline included.
    func line(for event: LogEvent) -> String {
        var all = metadata
        if let provided = metadataProvider?.get() { all.merge(provided) { $1 } }
        if let explicit = event.metadata { all.merge(explicit) { $1 } }
        if let error = event.error {
            all["error.message"] = "\(error)"
            all["error.type"] = "\(String(reflecting: type(of: error)))"
        }
        let fields = all.sorted { $0.key < $1.key }.map { ($0.key, "\($0.value)") }
        switch format {
        case .text:
            let pairs = fields.map { " \($0.0)=\(Self.oneLine($0.1))" }.joined()
            return "\(Self.timestamp()) \(event.level)\(label.isEmpty ? "" : " ")\(label):\(pairs) [\(event.source)] \(Self.oneLine("\(event.message)"))\n"
        case .json:
            let head = [("level", "\(event.level)"), ("label", label), ("message", "\(event.message)")]
            return "{" + (head + fields).map { "\(Self.quote($0.0)):\(Self.quote($0.1))" }.joined(separator: ",") + "}\n"
        }
    }

    /// Local time to the second, as `StreamLogHandler` writes it.
    private static func timestamp() -> String {
        var now = time(nil)
        var local = tm()
        guard localtime_r(&now, &local) != nil else { return "<unknown>" }
        var buffer = [CChar](repeating: 0, count: 64)
        let length = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%S%z", &local)
        return String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A JSON line's key or value: the payload writer's escaping.
    private static func quote(_ s: String) -> String {
        JSONWriter.string(.string(s))
    }

    /// A text line's message or value with its control characters escaped as JSON escapes them:
    /// what a sender wrote (a URL, a header, an error quoting either) cannot start a line of its
    /// own in the log, which a reader or shipper would take for one Attache wrote.
    static func oneLine(_ s: String) -> String {
        guard s.utf8.contains(where: { $0 < 0x20 }) else { return s }
        var out = ""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20: out += "\\u00" + String(scalar.value, radix: 16).leftPad(2)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}

extension String {
    func leftPad(_ n: Int) -> String { String(repeating: "0", count: max(0, n - count)) + self }
}
