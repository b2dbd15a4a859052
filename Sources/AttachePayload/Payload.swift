/// A push payload: the parsed object, and the bytes it came from (emitted unchanged on
/// passthrough and fallback).
public struct Payload: Sendable {
    public let original: [UInt8]
    public var root: JSONObject

    public init(bytes: [UInt8], parser: JSONParser = JSONParser()) throws(PayloadError) {
        guard case .object(let root) = try parser.parse(bytes) else {
            throw PayloadError(.notAnObject, "a payload must be a JSON object")
        }
        self.original = bytes
        self.root = root
    }

    public var aps: JSONObject? { root["aps"]?.objectValue }

    /// Only the number `aps.mutable-content: 1` asks to be modified (as on iOS).
    public var isMutable: Bool {
        guard let text = aps?["mutable-content"]?.numberText else { return false }
        return Double(text) == 1
    }

    /// iOS runs a service extension only for a mutable payload with alert text.
    public var wantsServiceExtension: Bool { isMutable && hasAlert }

    /// iOS ignores content without alert text, so the alert is never removed.
    public var hasAlert: Bool {
        switch aps?["alert"] {
        case .string(let s)?: return !s.isEmpty
        case .object(let o)?: return !o.members.isEmpty
        default: return false
        }
    }
}

extension JSONObject {
    /// Sets alert fields, turning a string alert into `{"body": …}` first. Other alert keys stay.
    public mutating func setAlert(title: String?, subtitle: String?, body: String?) {
        var aps = self["aps"]?.objectValue ?? JSONObject()
        var alert: JSONObject
        switch aps["alert"] {
        case .object(let o)?: alert = o
        case .string(let s)?: alert = JSONObject(["body": .string(s)])
        default: alert = JSONObject()
        }
        if let title { alert["title"] = .string(title) }
        if let subtitle { alert["subtitle"] = .string(subtitle) }
        if let body { alert["body"] = .string(body) }
        aps["alert"] = .object(alert)
        self["aps"] = .object(aps)
    }

    public var alertTitle: String? { self["aps"]?.objectValue?["alert"]?.objectValue?["title"]?.stringValue }
    public var alertBody: String? {
        switch self["aps"]?.objectValue?["alert"] {
        case .string(let s)?: return s
        case .object(let o)?: return o["body"]?.stringValue
        default: return nil
        }
    }
}
