import Attache
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
    /// The record's name: the digest of every field of the key as Swift spells it, so replicas
    /// of one version with the same settings agree on it, and a new render option changes it.
    static func name(for key: RenderKey) throws -> String {
        "\(try SHA256Hasher.hex(Array(String(reflecting: key).utf8))).json"
    }

    static func now() -> Int { Int(time(nil)) }

    static func encode(_ media: CachedMedia, at time: Int) -> [UInt8] {
        JSONWriter.bytes(.object(JSONObject([
            "version": .int(1), "time": .int(time), "kind": media.kind.map { .string($0.rawValue) } ?? .null, "format": media.format.map { .string($0.rawValue) } ?? .null,
            "bytes": .int(media.bytes), "entry": media.entry.json(record: true),
        ])))
    }

    /// The record's media, if it parses and is younger than `timeToLive`.
    static func decode(_ bytes: [UInt8], now: Int, timeToLive: Duration) -> CachedMedia? {
        guard let o = (try? JSONParser().parse(bytes))?.objectValue, o["version"]?.numberText == "1",
              let time = int(o["time"]), now - time >= 0, now - time < Int(timeToLive.seconds),
              let e = o["entry"]?.objectValue, let entry = AttachmentEntry(json: e),
              let bytes = int(o["bytes"]) else { return nil }
        let kind = o["kind"]?.stringValue.flatMap(MediaKind.init(rawValue:))
        let format = o["format"]?.stringValue.flatMap(MediaFormat.init(rawValue:))
        return CachedMedia(entry: entry, kind: kind, format: format, bytes: bytes, fromStore: true)
    }

    private static func int(_ value: JSONValue?) -> Int? {
        value?.numberText.flatMap { Int($0) }
    }
}
