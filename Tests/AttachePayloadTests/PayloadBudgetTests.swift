import Testing
@testable import AttachePayload

/// `PayloadBudget.fit` writes the entries straight into the payload's bytes; what it writes must
/// be what the entries' JSON trees, set under the key of a copy of the root, write.
@Suite struct PayloadBudgetTests {
    /// The tree's way: the root copied, the entries' trees set under `key`, the whole written.
    func treeWritten(_ root: JSONObject, entries: [AttachmentEntry], key: String, maxBytes: Int) -> [UInt8]? {
        for trim in 0...AttachmentEntry.trimLevels {
            var object = root
            object[key] = .array(entries.map { $0.json(trim: trim) })
            let bytes = JSONWriter.bytes(.object(object))
            if bytes.count <= maxBytes { return bytes }
        }
        return nil
    }

    static let full: AttachmentEntry = {
        var entry = AttachmentEntry(
            id: "photo \"1\"", url: "https://cdn.example.com/m/ab.jpg", type: "public.jpeg", bytes: 123_456, width: 1080, height: 720,
            frames: 24, duration: 2.5, thumbnail: .init(url: "https://cdn.example.com/m/ab-320.jpg", width: 320, height: 213),
            thumbhash: "1QcSHQRnh493V4dIh4eXh1h4kJUI", convertedFrom: .heic,
            options: MediaOptions(clippingRect: .init(x: 0.1, y: 0, width: 0.5, height: 1), thumbnailTime: 3, thumbnailHidden: false))
        entry.androidURL = "https://cdn.example.com/m/ab-android.jpg"
        entry.gif = .init(url: "https://cdn.example.com/m/ab.gif", width: 480, height: 270, bytes: 900_000)
        return entry
    }()

    static let entries: [[AttachmentEntry]] = [
        [],
        [AttachmentEntry(id: "", url: "u", type: "public.png", bytes: 0)],
        [full],
        [full, AttachmentEntry(id: "é\n", url: "https://x/\u{1}", type: "public.mpeg-4", bytes: 7, duration: 30)],
        [AttachmentEntry(id: "a", url: "https://x/a.gif", type: "com.compuserve.gif", bytes: 5, width: 1, height: 1, frames: 2,
                         duration: 0.125, options: MediaOptions(thumbnailHidden: true))],
    ]

    static let roots: [JSONObject] = [
        JSONObject(),
        JSONObject(["aps": .object(JSONObject(["alert": .string("hi"), "mutable-content": .int(1)]))]),
        JSONObject(["attachments": .string("first"), "aps": .object(JSONObject()), "n": .number("1.50")]),
        JSONObject(["aps": .null, "attachments": .array([]), "z": .bool(true)]),
        JSONObject(["aps": .null, "k": .string("\"q\""), "attachments": .int(3)]),
        JSONObject(["attachments": .int(1), "x": .int(2), "attachments": .int(3)]),
    ]

    @Test func writesWhatTheTreesWrite() {
        for root in Self.roots {
            for entries in Self.entries {
                for key in ["attachments", "media"] {
                    // Every budget at which the trim changes, one byte either side, and none.
                    let sizes = (0...AttachmentEntry.trimLevels).map { trim -> Int in
                        var object = root
                        object[key] = .array(entries.map { $0.json(trim: trim) })
                        return JSONWriter.bytes(.object(object)).count
                    }
                    for maxBytes in Set(sizes.flatMap { [$0 - 1, $0, $0 + 1] } + [0, 1 << 20]) {
                        let written = PayloadBudget.fit(root, entries: entries, key: key, maxBytes: maxBytes)
                        let expected = treeWritten(root, entries: entries, key: key, maxBytes: maxBytes)
                        #expect(written == expected, "\(key) at \(maxBytes): \(written.map { String(decoding: $0, as: UTF8.self) } ?? "nil")")
                    }
                }
            }
        }
    }

    /// An entry's members and their order, as devices and apps read them.
    @Test func anEntryIsTheObjectItWas() {
        #expect(JSONWriter.string(Self.full.json()) == #"""
            {"id":"photo \"1\"","url":"https://cdn.example.com/m/ab.jpg","type":"public.jpeg","bytes":123456,"frames":24,"duration":2.5,\#
            "converted-from":"heic","width":1080,"height":720,"thumbnail":{"url":"https://cdn.example.com/m/ab-320.jpg","width":320,\#
            "height":213},"thumbhash":"1QcSHQRnh493V4dIh4eXh1h4kJUI","gif":{"url":"https://cdn.example.com/m/ab.gif","width":480,\#
            "height":270,"bytes":900000},"thumbnail-clipping-rect":{"x":0.1,"y":0,"width":0.5,"height":1},"thumbnail-time":3,\#
            "thumbnail-hidden":false}
            """#)
        #expect(JSONWriter.string(Self.full.json(trim: 4, record: true)).hasPrefix(
            #"{"id":"photo \"1\"","url":"https://cdn.example.com/m/ab.jpg","type":"public.jpeg","android-url":"#))
    }
}
