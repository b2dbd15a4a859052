import AttacheFetch
import AttachePayload
import AttacheStore
import AttacheSupport
#if canImport(Glibc)
import Glibc
#endif

/// What a (media URL, render options) pair rendered to, kept in the store beside the media
/// (`results/<sha256 of the key>.json`), so that a replica sharing the store finds it and fetches
/// nothing: a campaign image is downloaded once per cluster, not once per replica. A record
/// carries the time it was written and counts for the cache's time to live; failures are never
/// recorded.
enum SharedResults {
    static func name(for key: String) throws -> String {
        "\(try SHA256.hex(Array(key.utf8))).json"
    }

    static func now() -> Int { Int(time(nil)) }

    static func encode(_ media: CachedMedia, at time: Int) -> [UInt8] {
        let e = media.entry
        var entry = JSONObject()
        entry["url"] = .string(e.url)
        entry["type"] = .string(e.type)
        entry["bytes"] = .int(e.bytes)
        if let width = e.width { entry["width"] = .int(width) }
        if let height = e.height { entry["height"] = .int(height) }
        if let frames = e.frames { entry["frames"] = .int(frames) }
        if let duration = e.duration { entry["duration"] = .double(duration) }
        if let t = e.thumbnail {
            entry["thumbnail"] = .object(JSONObject(["url": .string(t.url), "width": .int(t.width), "height": .int(t.height)]))
        }
        return JSONWriter.bytes(.object(JSONObject([
            "version": .int(1), "time": .int(time), "kind": .string(media.kind), "format": .string(media.format),
            "bytes": .int(media.bytes), "entry": .object(entry),
        ])))
    }

    /// The record's media, if it parses and is younger than `timeToLive`.
    static func decode(_ bytes: [UInt8], now: Int, timeToLive: Duration) -> CachedMedia? {
        guard let o = (try? JSONParser().parse(bytes))?.objectValue, o["version"]?.numberText == "1",
              let time = int(o["time"]), now - time >= 0, now - time < Int(timeToLive.seconds),
              let e = o["entry"]?.objectValue, let url = e["url"]?.stringValue, let type = e["type"]?.stringValue,
              let size = int(e["bytes"]), let kind = o["kind"]?.stringValue, let format = o["format"]?.stringValue,
              let bytes = int(o["bytes"]) else { return nil }
        var thumbnail: AttachmentEntry.Thumbnail?
        if let t = e["thumbnail"]?.objectValue {
            guard let url = t["url"]?.stringValue, let width = int(t["width"]), let height = int(t["height"]) else { return nil }
            thumbnail = .init(url: url, width: width, height: height)
        }
        let entry = AttachmentEntry(id: "", url: url, type: type, bytes: size, width: int(e["width"]), height: int(e["height"]),
                                    frames: int(e["frames"]), duration: e["duration"]?.doubleValue, thumbnail: thumbnail)
        return CachedMedia(entry: entry, kind: kind, format: format, bytes: bytes, fromStore: true)
    }

    private static func int(_ value: JSONValue?) -> Int? {
        value?.numberText.flatMap { Int($0) }
    }
}
