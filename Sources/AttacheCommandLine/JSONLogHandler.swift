import Logging

/// One JSON object per line on stderr, for log shippers.
public struct JSONLogHandler: LogHandler {
    public let label: String
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    /// Metadata of the task the line is logged from (with traces on: the trace and span ids).
    public var metadataProvider: Logger.MetadataProvider?

    public init(label: String, metadataProvider: Logger.MetadataProvider? = nil) {
        self.label = label
        self.metadataProvider = metadataProvider
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var fields: [(String, String)] = [("level", "\(event.level)"), ("label", label), ("message", "\(event.message)")]
        var all = metadata
        if let provided = metadataProvider?.get() { all.merge(provided) { $1 } }
        for (key, value) in all.merging(event.metadata ?? [:], uniquingKeysWith: { $1 }).sorted(by: { $0.key < $1.key }) {
            fields.append((key, "\(value)"))
        }
        let line = "{" + fields.map { "\(quote($0.0)):\(quote($0.1))" }.joined(separator: ",") + "}\n"
        writeStderr(Array(line.utf8))
    }

    private func quote(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case _ where scalar.value < 0x20: out += "\\u00" + String(scalar.value, radix: 16).leftPad(2)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

extension String {
    func leftPad(_ n: Int) -> String { String(repeating: "0", count: max(0, n - count)) + self }
}
