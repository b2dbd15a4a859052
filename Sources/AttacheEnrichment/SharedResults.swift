import Attache
import AttacheFetch
import AttachePayload
import AttacheStore
import AttacheSupport
import Synchronization
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
        "\(try SHA256Hasher.hex(Array(spelling(of: key).utf8))).json"
    }

    /// `String(reflecting: key)`, without walking the key by reflection for every payload (tens of
    /// microseconds: a twentieth of the service's CPU with 200 payloads at once): the options'
    /// part is spelt by reflection once for each distinct value and kept, and the strings around
    /// it as reflection spells a string. Were the key's fields to change order, it falls back to
    /// reflecting every key (`SharedResultsTests` holds the two equal).
    static func spelling(of key: RenderKey) -> String {
        var options = key
        (options.namespace, options.url, options.urlBase) = ("", "", "")
        let middle = spelt.withLock { $0[options] } ?? {
            let whole = String(reflecting: options)
            let (head, tail) = (#"AttacheEnrichment.RenderKey(namespace: "", url: "", "#, #", urlBase: "")"#)
            guard whole.hasPrefix(head), whole.hasSuffix(tail) else { return nil }
            let middle = String(whole.dropFirst(head.count).dropLast(tail.count))
            spelt.withLock { known in
                if known.count >= 1024 { known.removeAll() }
                known[options] = middle
            }
            return middle
        }()
        guard let middle else { return String(reflecting: key) }
        return "AttacheEnrichment.RenderKey(namespace: \(String(reflecting: key.namespace)), url: \(String(reflecting: key.url)), "
            + "\(middle), urlBase: \(String(reflecting: key.urlBase)))"
    }

    /// The options' part of each key spelt so far (a few: one per tenant's options and poster time).
    private static let spelt = Mutex<[RenderKey: String]>([:])

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
