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
        var tree = EntryTree()
        describe(trim: trim, record: record, into: &tree)
        return .object(tree.objects[0])
    }

    /// The entry's members, in order, said once for both ways an entry is written: as a JSON
    /// tree (`json`), and straight as bytes into a payload (`PayloadBudget.fit`), which for every
    /// enriched notification built the tree only to write it and free it.
    func describe<Sink: EntrySink & ~Copyable>(trim: Int, record: Bool, into sink: inout Sink) {
        sink.member("id", .string(id))
        sink.member("url", .string(url))
        sink.member("type", .string(type))
        if trim < 2 {
            sink.member("bytes", .int(bytes))
            if let frames { sink.member("frames", .int(frames)) }
            if let duration { sink.member("duration", .double(duration)) }
            if let convertedFrom { sink.member("converted-from", .string(convertedFrom.rawValue)) }
        }
        if trim < 3 {
            if let width { sink.member("width", .int(width)) }
            if let height { sink.member("height", .int(height)) }
        }
        if trim < 4, let thumbnail {
            sink.begin("thumbnail")
            sink.member("url", .string(thumbnail.url))
            sink.member("width", .int(thumbnail.width))
            sink.member("height", .int(thumbnail.height))
            sink.end()
        }
        if trim < 1, let thumbhash { sink.member("thumbhash", .string(thumbhash)) }
        if trim < 1, let gif {
            sink.begin("gif")
            sink.member("url", .string(gif.url))
            sink.member("width", .int(gif.width))
            sink.member("height", .int(gif.height))
            sink.member("bytes", .int(gif.bytes))
            sink.end()
        }
        if record, let androidURL { sink.member("android-url", .string(androidURL)) }
        if let rect = options.clippingRect {
            sink.begin("thumbnail-clipping-rect")
            sink.member("x", .double(rect.x))
            sink.member("y", .double(rect.y))
            sink.member("width", .double(rect.width))
            sink.member("height", .double(rect.height))
            sink.end()
        }
        if let time = options.thumbnailTime { sink.member("thumbnail-time", .double(time)) }
        if let hidden = options.thumbnailHidden { sink.member("thumbnail-hidden", .bool(hidden)) }
    }
}

/// Where `AttachmentEntry.describe` puts an entry's members: an object's, and objects within it.
protocol EntrySink: ~Copyable {
    mutating func member(_ key: String, _ value: JSONValue)
    /// An object under `key`, whose members follow until `end`.
    mutating func begin(_ key: String)
    mutating func end()
}

/// An entry as a JSON tree.
private struct EntryTree: EntrySink {
    /// The entry's object, then the one being filled within it.
    var objects = [JSONObject()]
    var keys: [String] = []

    init() {
        objects[0].members.reserveCapacity(12)
    }

    mutating func member(_ key: String, _ value: JSONValue) {
        objects[objects.count - 1].members.append(JSONObject.Member(key: key, value: value))
    }

    mutating func begin(_ key: String) {
        keys.append(key)
        objects.append(JSONObject())
    }

    mutating func end() {
        let object = objects.removeLast()
        member(keys.removeLast(), .object(object))
    }
}

/// Entries written as the JSON writer writes their trees, into a payload being written.
private struct EntryBytes: EntrySink, ~Copyable {
    var out: JSONWriter.Output
    /// Whether the object being written has no member yet.
    var empty = true

    init(_ out: consuming JSONWriter.Output) {
        self.out = out
    }

    mutating func member(_ key: String, _ value: JSONValue) {
        next(key)
        JSONWriter.write(value, into: &out)
    }

    mutating func begin(_ key: String) {
        next(key)
        out.append(UInt8(ascii: "{"))
        empty = true
    }

    /// A member's key, after a comma unless it is the object's first.
    @inline(__always)
    private mutating func next(_ key: String) {
        if !empty { out.append(UInt8(ascii: ",")) }
        empty = false
        JSONWriter.writeKey(key, into: &out)
    }

    mutating func end() {
        out.append(UInt8(ascii: "}"))
        empty = false
    }

    /// `entries` as a JSON array, trimmed by `trim` (`AttachmentEntry.trimLevels`).
    static func write(_ entries: [AttachmentEntry], trim: Int, into out: inout JSONWriter.Output) {
        var sink = EntryBytes(consume out)
        sink.out.append(UInt8(ascii: "["))
        for (index, entry) in entries.enumerated() {
            if index > 0 { sink.out.append(UInt8(ascii: ",")) }
            sink.out.append(UInt8(ascii: "{"))
            sink.empty = true
            entry.describe(trim: trim, record: false, into: &sink)
            sink.out.append(UInt8(ascii: "}"))
        }
        sink.out.append(UInt8(ascii: "]"))
        out = sink.out
    }
}

/// The APNs size budget.
public enum PayloadBudget {
    public static let apns = 4096
    public static let voip = 5120

    /// The smallest-trimmed encoding of `root` plus `entries` under `key` that fits in `maxBytes`,
    /// or nil when even the most trimmed one does not.
    public static func fit(_ root: JSONObject, entries: [AttachmentEntry], key: String, maxBytes: Int) -> [UInt8]? {
        // Written as the root with the entries set under `key` (`root[key] = …`) would be: in
        // place of the root's own member of that name, else last; the root is not copied to set
        // them.
        let members = root.members
        let place = members.firstIndex { $0.key == key }
        for trim in 0...AttachmentEntry.trimLevels {
            var out = JSONWriter.Output(capacity: 1024)
            out.append(UInt8(ascii: "{"))
            for (index, member) in members.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                JSONWriter.writeKey(member.key, into: &out)
                if index == place {
                    EntryBytes.write(entries, trim: trim, into: &out)
                } else {
                    JSONWriter.write(member.value, into: &out)
                }
            }
            if place == nil {
                if !members.isEmpty { out.append(UInt8(ascii: ",")) }
                JSONWriter.writeKey(key, into: &out)
                EntryBytes.write(entries, trim: trim, into: &out)
            }
            out.append(UInt8(ascii: "}"))
            if out.count <= maxBytes { return out.bytes }
        }
        return nil
    }
}
