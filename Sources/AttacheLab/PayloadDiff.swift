import AttachePayload

/// What enrichment changed in a payload, key by key: members added, changed or removed, each at
/// its JSON Pointer. Objects are compared member by member; anything else (arrays included) as a
/// whole value.
public struct PayloadDiff: Sendable, Equatable {
    public enum Change: String, Sendable {
        case added, changed, removed
    }

    public struct Entry: Sendable, Equatable {
        public var pointer: String
        public var change: Change
        public var before: JSONValue?
        public var after: JSONValue?
    }

    public var entries: [Entry]

    public init(before: JSONValue, after: JSONValue) {
        var entries: [Entry] = []
        Self.compare(before, after, at: "", into: &entries)
        self.entries = entries
    }

    private static func compare(_ a: JSONValue, _ b: JSONValue, at pointer: String, into entries: inout [Entry]) {
        guard case .object(let x) = a, case .object(let y) = b else {
            if a != b { entries.append(Entry(pointer: pointer, change: .changed, before: a, after: b)) }
            return
        }
        for member in x.members {
            let path = pointer + "/" + escape(member.key)
            if let other = y[member.key] {
                compare(member.value, other, at: path, into: &entries)
            } else {
                entries.append(Entry(pointer: path, change: .removed, before: member.value, after: nil))
            }
        }
        for member in y.members where !x.contains(member.key) {
            entries.append(Entry(pointer: pointer + "/" + escape(member.key), change: .added, before: nil, after: member.value))
        }
    }

    /// RFC 6901: `~` is `~0`, `/` is `~1`.
    private static func escape(_ key: String) -> String {
        var out = ""
        for c in key {
            switch c {
            case "~": out += "~0"
            case "/": out += "~1"
            default: out.append(c)
            }
        }
        return out
    }

    public var json: JSONValue {
        .array(entries.map { e in
            var o = JSONObject()
            o["pointer"] = .string(e.pointer)
            o["change"] = .string(e.change.rawValue)
            if let before = e.before { o["before"] = .string(JSONWriter.string(before)) }
            if let after = e.after { o["after"] = .string(JSONWriter.string(after)) }
            return .object(o)
        })
    }
}

/// The words a device shows for a payload: from `aps.alert` (a string, or title, subtitle and
/// body), an FCM send request's `message.notification` or its APNs payload, or a legacy FCM
/// `notification`; and the app's category, when one is named.
public struct NotificationText: Sendable, Equatable {
    public var title: String?
    public var subtitle: String?
    public var body: String?

    public init(_ root: JSONObject) {
        let message = root["message"]?.objectValue
        let apns = message?["apns"]?.objectValue?["payload"]?.objectValue ?? root
        if let alert = apns["aps"]?.objectValue?["alert"] {
            if let text = alert.stringValue {
                body = text
            } else if let o = alert.objectValue {
                title = o["title"]?.stringValue
                subtitle = o["subtitle"]?.stringValue
                body = o["body"]?.stringValue
            }
        }
        let notification = message?["notification"]?.objectValue ?? root["notification"]?.objectValue
        title = title ?? notification?["title"]?.stringValue
        body = body ?? notification?["body"]?.stringValue
    }

    public var json: JSONValue {
        .object(JSONObject([
            "title": title.map(JSONValue.string) ?? .null, "subtitle": subtitle.map(JSONValue.string) ?? .null,
            "body": body.map(JSONValue.string) ?? .null,
        ]))
    }
}
