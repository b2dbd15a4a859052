/// Finds media requests in every push SDK's dialect (see PRODUCT.md's table).
public struct DialectReader: Sendable {
    /// Keys read as a single media URL each, in this order: top-level names, or JSON Pointers
    /// (`/data/image`) for nested ones.
    public var genericKeys: [String]
    public var maxAttachments: Int

    /// The spellings payloads written by hand use (tutorials, Apple-focused guides), read unless
    /// turned off.
    public static let defaultGenericKeys = ["imageUrl", "image_url", "image-url", "mediaUrl", "media_url", "media-url",
                                            "attachmentUrl", "attachment-url"]

    public init(genericKeys: [String] = DialectReader.defaultGenericKeys, maxAttachments: Int = 4) {
        self.genericKeys = genericKeys
        self.maxAttachments = maxAttachments
    }

    /// Requests in payload order, one per distinct URL (a URL named twice is fetched once and
    /// rewritten everywhere), Airship's `thumbnail_id` first since iOS thumbnails the first
    /// attachment, at most `maxAttachments`.
    public func requests(in root: JSONObject) -> [MediaRequest] {
        var found: [MediaRequest] = []
        found += fcm(root)
        found += oneSignal(root)
        found += airship(root)
        found += single(root, container: "ab", key: "att", dialect: .braze, id: "braze")
        found += cleverTap(root)
        found += single(root, container: "itbl", key: "attachment-url", dialect: .iterable, id: "iterable")
        found += customerIO(root)
        for key in genericKeys {
            let path = key.hasPrefix("/") ? JSONPointer(key)?.path(in: .object(root)) : [.key(key)]
            if let path, let url = JSONValue.object(root)[path: path]?.stringValue.flatMap(Self.url) {
                found.append(MediaRequest(id: key, url: url, dialect: .generic, locations: [path]))
            }
        }
        var merged: [MediaRequest] = []
        for request in found {
            if let i = merged.firstIndex(where: { $0.url == request.url }) {
                merged[i].locations += request.locations
            } else {
                merged.append(request)
            }
        }
        return Array(merged.prefix(maxAttachments))
    }

    /// A usable URL string: trimmed, non-empty. Whether it may be fetched is the fetcher's call.
    static func url(_ text: String) -> String? {
        let trimmed = text.trimmingSpaces
        return trimmed.isEmpty ? nil : trimmed
    }

    private func fcm(_ root: JSONObject) -> [MediaRequest] {
        guard let url = root["fcm_options"]?.objectValue?["image"]?.stringValue.flatMap(Self.url) else { return [] }
        return [MediaRequest(id: "fcm", url: url, dialect: .fcm, locations: [[.key("fcm_options"), .key("image")]])]
    }

    private func oneSignal(_ root: JSONObject) -> [MediaRequest] {
        var out: [MediaRequest] = []
        for base in [[JSONPathComponent](), [.key("os_data")]] {
            let container = base.isEmpty ? root : JSONValue.object(root)[path: base]?.objectValue
            guard let att = container?["att"]?.objectValue else { continue }
            for member in att.members {
                guard let url = member.value.stringValue.flatMap(Self.url) else { continue }
                out.append(MediaRequest(id: member.key, url: url, dialect: .onesignal, locations: [base + [.key("att"), .key(member.key)]]))
            }
        }
        return out
    }

    private func airship(_ root: JSONObject) -> [MediaRequest] {
        let key = "com.urbanairship.media_attachment"
        guard let media = root[key]?.objectValue else { return [] }
        var options = MediaOptions()
        if let o = media["options"]?.objectValue {
            if let crop = o["crop"]?.objectValue, let x = crop["x"]?.doubleValue, let y = crop["y"]?.doubleValue,
               let w = crop["width"]?.doubleValue, let h = crop["height"]?.doubleValue {
                options.clippingRect = MediaOptions.ClipRect(x: x, y: y, width: w, height: h)
            }
            options.thumbnailTime = o["time"]?.doubleValue
            options.thumbnailHidden = o["hidden"]?.boolValue
        }
        var out: [MediaRequest] = []
        func add(_ url: String?, id: String?, path: [JSONPathComponent]) {
            guard let url = url.flatMap(Self.url) else { return }
            out.append(MediaRequest(id: id ?? "airship-\(out.count)", url: url, dialect: .airship, locations: [path], options: options))
        }
        switch media["url"] {
        case .string(let s)?: add(s, id: nil, path: [.key(key), .key("url")])
        case .array(let items)?:
            for (i, item) in items.enumerated() { add(item.stringValue, id: nil, path: [.key(key), .key("url"), .index(i)]) }
        default: break
        }
        for (i, item) in (media["urls"]?.arrayValue ?? []).enumerated() {
            guard let o = item.objectValue else { continue }
            add(o["url"]?.stringValue, id: o["url_id"]?.stringValue, path: [.key(key), .key("urls"), .index(i), .key("url")])
        }
        if let thumb = media["thumbnail_id"]?.stringValue, let i = out.firstIndex(where: { $0.id == thumb }), i > 0 {
            out.insert(out.remove(at: i), at: 0)
        }
        return out
    }

    private func single(_ root: JSONObject, container: String, key: String, dialect: Dialect, id: String) -> [MediaRequest] {
        guard let holder = root[container]?.objectValue else { return [] }
        switch holder[key] {
        case .string(let s)?:
            guard let url = Self.url(s) else { return [] }
            return [MediaRequest(id: id, url: url, dialect: dialect, locations: [[.key(container), .key(key)]])]
        case .object(let o)?:  // Braze: {"url": …, "type": "jpg"}
            guard let url = o["url"]?.stringValue.flatMap(Self.url) else { return [] }
            let type = o["type"]?.stringValue
            return [MediaRequest(id: id, url: url, dialect: dialect, locations: [[.key(container), .key(key), .key("url")]],
                                 options: MediaOptions(typeHint: type),
                                 typeHint: type == nil ? nil : TypeHintField(path: [.key(container), .key(key), .key("type")], form: .fileExtension))]
        default:
            return []
        }
    }

    private func cleverTap(_ root: JSONObject) -> [MediaRequest] {
        guard let url = root["ct_mediaUrl"]?.stringValue.flatMap(Self.url) else { return [] }
        let type = root["ct_mediaType"]?.stringValue
        return [MediaRequest(id: "clevertap", url: url, dialect: .clevertap, locations: [[.key("ct_mediaUrl")]],
                             options: MediaOptions(typeHint: type),
                             typeHint: type == nil ? nil : TypeHintField(path: [.key("ct_mediaType")], form: .cleverTapKind))]
    }

    private func customerIO(_ root: JSONObject) -> [MediaRequest] {
        let path: [JSONPathComponent] = [.key("CIO"), .key("push"), .key("image")]
        guard let url = JSONValue.object(root)[path: path]?.stringValue.flatMap(Self.url) else { return [] }
        return [MediaRequest(id: "customerio", url: url, dialect: .customerio, locations: [path])]
    }

    /// Airship's `content` (title, subtitle, body), which its SDK applies to the alert.
    public func airshipContent(in root: JSONObject) -> (title: String?, subtitle: String?, body: String?)? {
        guard let content = root["com.urbanairship.media_attachment"]?.objectValue?["content"]?.objectValue else { return nil }
        let c = (content["title"]?.stringValue, content["subtitle"]?.stringValue, content["body"]?.stringValue)
        return c.0 == nil && c.1 == nil && c.2 == nil ? nil : c
    }
}

extension String {
    var trimmingSpaces: String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
              let last = scalars.lastIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        return String(scalars[first...last])
    }
}
