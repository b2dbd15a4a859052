/// One entry of the `attachments` array that Attache adds to an enriched payload.
extension AttachmentEntry {
    /// Where the attachments array goes unless a setting names another key.
    public static let defaultKey = "attachments"
}

public struct AttachmentEntry: Sendable, Equatable {
    public struct Thumbnail: Sendable, Equatable {
        public var url: String
        public var width: Int
        public var height: Int
        public init(url: String, width: Int, height: Int) {
            self.url = url
            self.width = width
            self.height = height
        }
    }

    /// Another file of the same media: an animation's GIF copy beside its movie.
    public struct Copy: Sendable, Equatable {
        public var url: String
        public var width: Int
        public var height: Int
        public var bytes: Int
        public init(url: String, width: Int, height: Int, bytes: Int) {
            self.url = url
            self.width = width
            self.height = height
            self.bytes = bytes
        }
    }

    public var id: String
    public var url: String
    /// A UTI: `public.jpeg`, `public.png`, `com.compuserve.gif`, `public.mpeg-4`, …
    public var type: String
    public var bytes: Int
    public var width: Int?
    public var height: Int?
    public var frames: Int?
    public var duration: Double?
    public var thumbnail: Thumbnail?
    /// A ThumbHash (base64) of the image, for an app to show while the attachment loads.
    public var thumbhash: String?
    /// The format the media came in, when `url` is a conversion of it (`heic`, `webp`, …).
    public var convertedFrom: MediaFormat?
    /// The Android copy made for an FCM send request; never in the APNs payload.
    public var androidURL: String?
    /// When `url` is a movie made of an animation: the animation as a GIF within Apple's image
    /// cap, which iOS plays by itself, looping (an app may attach it instead).
    public var gif: Copy?
    public var options: MediaOptions

    public init(id: String, url: String, type: String, bytes: Int, width: Int? = nil, height: Int? = nil,
                frames: Int? = nil, duration: Double? = nil, thumbnail: Thumbnail? = nil, thumbhash: String? = nil,
                convertedFrom: MediaFormat? = nil, options: MediaOptions = .init()) {
        self.id = id
        self.url = url
        self.type = type
        self.bytes = bytes
        self.width = width
        self.height = height
        self.frames = frames
        self.duration = duration
        self.thumbnail = thumbnail
        self.thumbhash = thumbhash
        self.convertedFrom = convertedFrom
        self.options = options
    }

    /// An entry as `json()` wrote it (id and options aside); nil when a required field is missing.
    public init?(json o: JSONObject) {
        func int(_ key: String, in object: JSONObject = o) -> Int? { object[key]?.numberText.flatMap { Int($0) } }
        guard let url = o["url"]?.stringValue, let type = o["type"]?.stringValue, let bytes = int("bytes") else { return nil }
        var thumbnail: Thumbnail?
        if let t = o["thumbnail"]?.objectValue {
            guard let url = t["url"]?.stringValue, let width = int("width", in: t), let height = int("height", in: t) else { return nil }
            thumbnail = Thumbnail(url: url, width: width, height: height)
        }
        self.init(id: o["id"]?.stringValue ?? "", url: url, type: type, bytes: bytes, width: int("width"), height: int("height"),
                  frames: int("frames"), duration: o["duration"]?.doubleValue, thumbnail: thumbnail,
                  thumbhash: o["thumbhash"]?.stringValue, convertedFrom: o["converted-from"]?.stringValue.flatMap(MediaFormat.init(rawValue:)))
        androidURL = o["android-url"]?.stringValue
        if let g = o["gif"]?.objectValue {
            guard let url = g["url"]?.stringValue, let width = int("width", in: g), let height = int("height", in: g),
                  let bytes = int("bytes", in: g) else { return nil }
            gif = Copy(url: url, width: width, height: height, bytes: bytes)
        }
    }

    /// The same media attached under another payload's id and options.
    public func with(id: String, options: MediaOptions) -> AttachmentEntry {
        var copy = self
        copy.id = id
        copy.options = options
        return copy
    }

    /// How much to leave out when the payload is over budget: 0 is everything, each level
    /// drops more of what a device can do without (the placeholder hash and the GIF copy, byte
    /// counts and what it was converted from, sizes, then the thumbnail).
    public static let trimLevels = 4

    /// `record`: with what stays out of payloads (the Android copy's URL), for the shared results.
    public func json(trim: Int = 0, record: Bool = false) -> JSONValue {
        // Each key once, so members are appended, not looked for first: an entry is made for
        // every attachment of every payload written.
        var o = JSONObject()
        o.members.reserveCapacity(12)
        func put(_ key: String, _ value: JSONValue) { o.members.append(JSONObject.Member(key: key, value: value)) }
        put("id", .string(id))
        put("url", .string(url))
        put("type", .string(type))
        if trim < 2 {
            put("bytes", .int(bytes))
            if let frames { put("frames", .int(frames)) }
            if let duration { put("duration", .double(duration)) }
            if let convertedFrom { put("converted-from", .string(convertedFrom.rawValue)) }
        }
        if trim < 3 {
            if let width { put("width", .int(width)) }
            if let height { put("height", .int(height)) }
        }
        if trim < 4, let thumbnail {
            put("thumbnail", .object(JSONObject(["url": .string(thumbnail.url), "width": .int(thumbnail.width), "height": .int(thumbnail.height)])))
        }
        if trim < 1, let thumbhash { put("thumbhash", .string(thumbhash)) }
        if trim < 1, let gif {
            put("gif", .object(JSONObject(["url": .string(gif.url), "width": .int(gif.width), "height": .int(gif.height), "bytes": .int(gif.bytes)])))
        }
        if record, let androidURL { put("android-url", .string(androidURL)) }
        if let rect = options.clippingRect {
            put("thumbnail-clipping-rect", .object(JSONObject([
                "x": .double(rect.x), "y": .double(rect.y), "width": .double(rect.width), "height": .double(rect.height),
            ])))
        }
        if let time = options.thumbnailTime { put("thumbnail-time", .double(time)) }
        if let hidden = options.thumbnailHidden { put("thumbnail-hidden", .bool(hidden)) }
        return .object(o)
    }
}

/// The APNs size budget.
public enum PayloadBudget {
    public static let apns = 4096
    public static let voip = 5120

    /// The smallest-trimmed encoding of `root` plus `entries` under `key` that fits in `maxBytes`,
    /// or nil when even the most trimmed one does not.
    public static func fit(_ root: JSONObject, entries: [AttachmentEntry], key: String, maxBytes: Int) -> [UInt8]? {
        for trim in 0...AttachmentEntry.trimLevels {
            var object = root
            object[key] = .array(entries.map { $0.json(trim: trim) })
            let bytes = JSONWriter.bytes(.object(object))
            if bytes.count <= maxBytes { return bytes }
        }
        return nil
    }
}
