/// Finds media requests the way each push SDK's own Notification Service Extension reads them
/// (PRODUCT.md's table; the SDK file each reader follows is named beside it).
public struct DialectReader: Sendable {
    /// Keys read as a single media URL each, in this order: top-level names, or JSON Pointers
    /// (`/data/image`) for nested ones.
    public var genericKeys: [String] {
        didSet { (topLevelKeys, generic) = (Self.topLevelKeys(genericKeys), genericKeys.map(Self.splitGenericKey)) }
    }
    public var maxAttachments: Int
    /// The top-level keys the dialects read (a generic JSON Pointer's first step among them):
    /// where a repeated key makes a payload ambiguous. Made when the keys are set, not for each
    /// payload.
    private(set) var topLevelKeys: Set<String>
    /// `genericKeys` split into each key and its type key, once, not for each payload.
    private var generic: [(key: String, typeKey: String?)]

    /// The spellings payloads written by hand use (tutorials, Apple-focused guides), read unless
    /// turned off.
    public static let defaultGenericKeys = ["imageUrl", "image_url", "image-url", "mediaUrl", "media_url", "media-url",
                                            "attachmentUrl", "attachment-url"]

    public init(genericKeys: [String] = DialectReader.defaultGenericKeys, maxAttachments: Int = 4) {
        self.genericKeys = genericKeys
        self.maxAttachments = maxAttachments
        self.topLevelKeys = Self.topLevelKeys(genericKeys)
        self.generic = genericKeys.map(Self.splitGenericKey)
    }

    /// Requests in payload order, one per distinct URL (a URL named twice is fetched once and
    /// rewritten everywhere), at most `maxAttachments`.
    public func requests(in root: JSONObject) -> [MediaRequest] {
        let value = JSONValue.object(root)
        var found: [MediaRequest] = []
        found += fcm(root)
        found += oneSignal(root)
        found += airship(root)
        found += braze(root)
        found += cleverTap(root)
        // Iterable (iterable-swift-sdk, ITBNotificationServiceExtension.swift): `itbl.attachment-url`.
        found += single(root, "itbl", [.key("attachment-url")], dialect: .iterable)
        found += customerIO(root)
        found += klaviyo(root)
        // Pushwoosh (pushwoosh-ios-sdk, PWNotificationExtensionManager, whose source is not public:
        // its documented payload): a top-level `attachment`.
        found += single(root, "attachment", dialect: .pushwoosh)
        found += batch(root)
        found += mixpanel(root)
        found += notifee(root)
        // Expo (expo push service and expo-notifications): a message's `richContent.image` reaches
        // iOS as `body._richContent.image` (`data` goes under `body`).
        found += single(root, "body", [.key("_richContent"), .key("image")], dialect: .expo)
        // Salesforce Marketing Cloud (MarketingCloudSDK-iOS, _posts/2017-10-04-rich-notifications.md,
        // the extension it ships as the example): `_mediaUrl`; `_mediaAlt` is the body text the
        // extension shows when the media cannot be had, and passes through untouched.
        found += single(root, "_mediaUrl", dialect: .salesforce)
        // Adobe Journey Optimizer (aepsdk-messaging-ios, its notification service and tests): `adb_media`.
        found += single(root, "adb_media", dialect: .adobe)
        for (key, typeKey) in generic {
            guard let path = Self.path(key, in: root),
                  let url = value[path: path]?.stringValue.flatMap(Self.url) else { continue }
            let typePath = typeKey.flatMap { Self.place($0, in: root) }
            found.append(MediaRequest(id: key, url: url, dialect: .generic, locations: [path],
                                      typeHint: typePath.map { TypeHintField(path: $0, form: .asWritten) }))
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

    /// Every top-level key a vendor reader above reads, gates included (a repeated one makes the
    /// payload ambiguous). DialectTests checks it against what the readers find in every sample.
    static let vendorTopLevelKeys = [
        "fcm_options", "att", "os_data", "com.urbanairship.media_attachment", "ab", "ct_mediaUrl", "ct_mediaType", "itbl",
        "CIO", "CIO-Delivery-ID", "CIO-Delivery-Token", "body", "rich-media", "rich-media-type", "attachment", "com.batch",
        "mp", "mp_media_url", "notifee_options", "_mediaUrl", "adb_media",
    ]

    /// Every key (and type key) generic entries name, in order.
    public static func namedKeys(in entries: [String]) -> [String] {
        entries.flatMap { entry -> [String] in
            let (key, typeKey) = splitGenericKey(entry)
            return [key] + (typeKey.map { [$0] } ?? [])
        }
    }

    /// `KEY` or `KEY=TYPEKEY`: a generic media key and the key of its type field, if any.
    static func splitGenericKey(_ entry: String) -> (key: String, typeKey: String?) {
        // By its UTF-8 bytes: a search by Character walks grapheme clusters, and this runs for
        // every generic key of every payload.
        guard let equals = entry.utf8.firstIndex(of: UInt8(ascii: "=")) else { return (entry, nil) }
        let type = String(entry[entry.utf8.index(after: equals)...])
        return (String(entry[..<equals]), type.isEmpty ? nil : type)
    }

    /// Where a generic key's value is: a top-level name the payload holds, or where a JSON
    /// Pointer leads in `root`. Nil for a name the payload does not hold (no path is made for it).
    static func path(_ key: String, in root: JSONObject) -> [JSONPathComponent]? {
        guard isPointer(key) || root.contains(key) else { return nil }
        return place(key, in: root)
    }

    /// Where a type key's value is or would be: a top-level name whether or not the payload holds
    /// it, or where a JSON Pointer leads in `root`.
    static func place(_ key: String, in root: JSONObject) -> [JSONPathComponent]? {
        isPointer(key) ? JSONPointer(key)?.path(in: .object(root)) : [.key(key)]
    }

    private static func isPointer(_ key: String) -> Bool { key.utf8.first == UInt8(ascii: "/") }

    /// A usable URL string: trimmed, non-empty. Whether it may be fetched is the fetcher's call.
    static func url(_ text: String) -> String? {
        let trimmed = text.trimmingSpaces
        return trimmed.isEmpty ? nil : trimmed
    }

    /// One URL at a fixed place (the top-level `key`, then `rest`), its id the dialect's name.
    /// The top-level key is looked for first: most payloads hold none of a dialect's.
    private func single(_ root: JSONObject, _ key: String, _ rest: [JSONPathComponent] = [], dialect: Dialect,
                        typeHint: TypeHintField? = nil) -> [MediaRequest] {
        guard let top = root[key], let url = (rest.isEmpty ? top : top[path: rest])?.stringValue.flatMap(Self.url) else { return [] }
        return [MediaRequest(id: dialect.rawValue, url: url, dialect: dialect, locations: [[.key(key)] + rest], typeHint: typeHint)]
    }

    // Firebase: FIRMessagingExtensionHelper reads `fcm_options.image`.
    private func fcm(_ root: JSONObject) -> [MediaRequest] {
        guard let url = root["fcm_options"]?.objectValue?["image"]?.stringValue.flatMap(Self.url) else { return [] }
        return [MediaRequest(id: "fcm", url: url, dialect: .fcm, locations: [[.key("fcm_options"), .key("image")]])]
    }

    // OneSignal (OneSignal-iOS-SDK, OneSignalAttachmentsController / OSNotification+OneSignal):
    // `os_data.att` when there is an `os_data` dictionary, top-level `att` only when there is none.
    // A value that is not an http(s) URL names a file bundled in the app: the device's to attach,
    // not Attache's, and not a failure.
    private func oneSignal(_ root: JSONObject) -> [MediaRequest] {
        let data = root["os_data"]?.objectValue
        guard let att = (data ?? root)["att"]?.objectValue else { return [] }
        let base: [JSONPathComponent] = data != nil ? [.key("os_data")] : []
        return att.members.compactMap { member in
            guard let url = member.value.stringValue.flatMap(Self.url), Self.isWeb(url) else { return nil }
            return MediaRequest(id: member.key, url: url, dialect: .onesignal, locations: [base + [.key("att"), .key(member.key)]])
        }
    }

    static func isWeb(_ url: String) -> Bool {
        let lower = url.lowercased()
        return lower.hasPrefix("http://") || lower.hasPrefix("https://")
    }

    // Airship (ios-library, UAMediaAttachmentPayload): `urls` [{url, url_id}] wins over `url`
    // (a string or a list) — an empty `urls` is no media; `options.crop` outside the unit square
    // makes the SDK drop the whole media payload, and so does Attache (an invalid clipping rect is
    // never emitted); `thumbnail_id` keeps the order and hides every other attachment's thumbnail.
    private func airship(_ root: JSONObject) -> [MediaRequest] {
        let key = "com.urbanairship.media_attachment"
        guard let media = root[key]?.objectValue else { return [] }
        var options = MediaOptions()
        if let o = media["options"]?.objectValue {
            if let crop = o["crop"] {
                guard let c = crop.objectValue, let x = c["x"]?.doubleValue, let y = c["y"]?.doubleValue,
                      let w = c["width"]?.doubleValue, let h = c["height"]?.doubleValue,
                      [x, y, w, h].allSatisfy({ (0...1).contains($0) }), x + w <= 1, y + h <= 1 else { return [] }
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
        if let urls = media["urls"]?.arrayValue {
            for (i, item) in urls.enumerated() {
                guard let o = item.objectValue else { continue }
                add(o["url"]?.stringValue, id: o["url_id"]?.stringValue, path: [.key(key), .key("urls"), .index(i), .key("url")])
            }
        } else {
            switch media["url"] {
            case .string(let s)?: add(s, id: nil, path: [.key(key), .key("url")])
            case .array(let items)?:
                for (i, item) in items.enumerated() { add(item.stringValue, id: nil, path: [.key(key), .key("url"), .index(i)]) }
            default: break
            }
        }
        if let thumb = media["thumbnail_id"]?.stringValue, out.contains(where: { $0.id == thumb }) {
            for i in out.indices where out[i].id != thumb { out[i].options.thumbnailHidden = true }
        }
        return out
    }

    // Braze (braze-swift-sdk, its notification service extension support): `ab.att` {url, type}; `type`
    // is the extension of the file the SDK saves and without it the SDK attaches nothing.
    private func braze(_ root: JSONObject) -> [MediaRequest] {
        guard let att = root["ab"]?.objectValue?["att"]?.objectValue, let url = att["url"]?.stringValue.flatMap(Self.url) else { return [] }
        let path: [JSONPathComponent] = [.key("ab"), .key("att")]
        return [MediaRequest(id: "braze", url: url, dialect: .braze, locations: [path + [.key("url")]],
                             options: MediaOptions(typeHint: att["type"]?.stringValue),
                             typeHint: TypeHintField(path: path + [.key("type")], form: .fileExtension, addWhenMissing: true))]
    }

    // CleverTap (CTNotificationService, CTNotificationServiceExtension.m): `ct_mediaUrl` and
    // `ct_mediaType` (image, gif, video, audio), both required by the SDK.
    private func cleverTap(_ root: JSONObject) -> [MediaRequest] {
        guard let url = root["ct_mediaUrl"]?.stringValue.flatMap(Self.url) else { return [] }
        return [MediaRequest(id: "clevertap", url: url, dialect: .clevertap, locations: [[.key("ct_mediaUrl")]],
                             options: MediaOptions(typeHint: root["ct_mediaType"]?.stringValue),
                             typeHint: TypeHintField(path: [.key("ct_mediaType")], form: .cleverTapKind, addWhenMissing: true))]
    }

    // Customer.io (customerio-ios, its rich push handling): `CIO.push.image`, and the SDK handles
    // the push only when it carries `CIO-Delivery-ID` and `CIO-Delivery-Token`: without them the
    // payload is not a Customer.io one and its image is not read.
    private func customerIO(_ root: JSONObject) -> [MediaRequest] {
        guard root["CIO-Delivery-ID"]?.stringValue != nil, root["CIO-Delivery-Token"]?.stringValue != nil else { return [] }
        return single(root, "CIO", [.key("push"), .key("image")], dialect: .customerio)
    }

    // Klaviyo (klaviyo-swift-sdk, Sources/KlaviyoSwiftExtension/KlaviyoExtension.swift): only a
    // payload whose `body` has `_k`; `rich-media`, saved with the extension `rich-media-type`
    // (the SDK's default, jpeg, when absent — added when the copy is not a JPEG).
    private func klaviyo(_ root: JSONObject) -> [MediaRequest] {
        guard root["body"]?.objectValue?["_k"] != nil else { return [] }
        return single(root, "rich-media", dialect: .klaviyo,
                      typeHint: TypeHintField(path: [.key("rich-media-type")], form: .fileExtension, addWhenMissing: true))
    }

    // Batch (Batch-iOS-SDK-Extension, Sources/Swift/Rich Notifications/RichNotificationHelper.swift):
    // `com.batch` → `at` → `u` (URL) and `t` (handed to iOS as the attachment's type hint); the SDK
    // attaches nothing unless both are there.
    private func batch(_ root: JSONObject) -> [MediaRequest] {
        guard let at = root["com.batch"]?.objectValue?["at"]?.objectValue, let type = at["t"]?.stringValue,
              let url = at["u"]?.stringValue.flatMap(Self.url) else { return [] }
        let path: [JSONPathComponent] = [.key("com.batch"), .key("at")]
        return [MediaRequest(id: "batch", url: url, dialect: .batch, locations: [path + [.key("u")]], options: MediaOptions(typeHint: type),
                             typeHint: TypeHintField(path: path + [.key("t")], form: .typeIdentifier))]
    }

    // Mixpanel (mixpanel-iphone, Mixpanel/MPNotificationServiceExtension.m): only a Mixpanel push
    // (one with `mp`); `mp_media_url`, saved with its URL's path extension (a rewritten URL ends in
    // the copy's).
    private func mixpanel(_ root: JSONObject) -> [MediaRequest] {
        guard root["mp"] != nil else { return [] }
        return single(root, "mp_media_url", dialect: .mixpanel)
    }

    // Notifee (notifee, ios/NotifeeCore/NotifeeCoreExtensionHelper.m): the first of
    // `notifee_options.ios.attachments` {url, typeHint, thumbnailHidden, thumbnailClippingRect,
    // thumbnailTime}, else `notifee_options.image`; one attachment.
    private func notifee(_ root: JSONObject) -> [MediaRequest] {
        guard let options = root["notifee_options"]?.objectValue else { return [] }
        let base: [JSONPathComponent] = [.key("notifee_options"), .key("ios"), .key("attachments"), .index(0)]
        if let first = JSONValue.object(root)[path: base]?.objectValue {
            guard let url = first["url"]?.stringValue.flatMap(Self.url) else { return [] }
            var o = MediaOptions(thumbnailTime: first["thumbnailTime"]?.doubleValue, thumbnailHidden: first["thumbnailHidden"]?.boolValue,
                                 typeHint: first["typeHint"]?.stringValue)
            if let r = first["thumbnailClippingRect"]?.objectValue, let x = r["x"]?.doubleValue, let y = r["y"]?.doubleValue,
               let w = r["width"]?.doubleValue, let h = r["height"]?.doubleValue {
                o.clippingRect = MediaOptions.ClipRect(x: x, y: y, width: w, height: h)
            }
            return [MediaRequest(id: first["id"]?.stringValue ?? "notifee", url: url, dialect: .notifee, locations: [base + [.key("url")]],
                                 options: o, typeHint: TypeHintField(path: base + [.key("typeHint")], form: .typeIdentifier))]
        }
        guard (options["image"]?.stringValue?.count ?? 0) > 1 else { return [] }
        return single(root, "notifee_options", [.key("image")], dialect: .notifee)
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
