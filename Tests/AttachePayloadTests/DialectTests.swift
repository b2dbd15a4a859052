import AttacheTesting
import Testing
@testable import AttachePayload

@Suite struct DialectTests {
    let reader = DialectReader()

    func requests(_ json: String) throws -> [MediaRequest] {
        reader.requests(in: try Payload(bytes: Array(json.utf8)).root)
    }

    @Test func firebase() throws {
        let r = try requests(#"{"aps":{},"fcm_options":{"image":"https://x/a.jpg"}}"#)
        #expect(r == [MediaRequest(id: "fcm", url: "https://x/a.jpg", dialect: .fcm, locations: [[.key("fcm_options"), .key("image")]])])
    }

    @Test func oneSignalTopLevelAndOsData() throws {
        let top = try requests(#"{"att":{"id1":"https://x/1.jpg","id2":"https://x/2.png"}}"#)
        #expect(top.map(\.id) == ["id1", "id2"])
        let r = try requests(#"{"att":{"id1":"https://x/1.jpg","id2":"https://x/2.png"},"os_data":{"att":{"id3":"https://x/3.gif"}}}"#)
        #expect(r.map(\.id) == ["id3"])  // with os_data, the top-level att is not OneSignal's
        #expect(r[0].locations == [[.key("os_data"), .key("att"), .key("id3")]])
        #expect(r.allSatisfy { $0.dialect == .onesignal })
    }

    @Test func airshipEveryShape() throws {
        let json = #"""
        {"com.urbanairship.media_attachment":{"url":["https://x/a.jpg","https://x/b.jpg"],
         "urls":[{"url":"https://x/c.jpg","url_id":"cee"}],"thumbnail_id":"cee",
         "options":{"crop":{"x":0.1,"y":0.2,"width":0.5,"height":0.6},"time":3,"hidden":true},
         "content":{"title":"T","subtitle":"S","body":"B"}}}
        """#
        let r = try requests(json)
        #expect(r.map(\.url) == ["https://x/c.jpg"])  // `urls` wins over `url`
        #expect(r[0].id == "cee")
        #expect(r[0].locations == [[.key("com.urbanairship.media_attachment"), .key("urls"), .index(0), .key("url")]])
        #expect(r[0].options.clippingRect == .init(x: 0.1, y: 0.2, width: 0.5, height: 0.6))
        #expect(r[0].options.thumbnailTime == 3)
        #expect(r[0].options.thumbnailHidden == true)
        let list = try requests(#"{"com.urbanairship.media_attachment":{"url":["https://x/a.jpg","https://x/b.jpg"]}}"#)
        #expect(list.map(\.url) == ["https://x/a.jpg", "https://x/b.jpg"])
        #expect(list[1].locations == [[.key("com.urbanairship.media_attachment"), .key("url"), .index(1)]])
        let content = reader.airshipContent(in: try Payload(bytes: Array(json.utf8)).root)
        #expect(content?.title == "T" && content?.subtitle == "S" && content?.body == "B")
        let single = try requests(#"{"com.urbanairship.media_attachment":{"url":"https://x/one.jpg"}}"#)
        #expect(single.map(\.url) == ["https://x/one.jpg"])
    }

    @Test func brazeCleverTapIterableCustomerIO() throws {
        let braze = try requests(#"{"ab":{"att":{"url":"https://x/b.gif","type":"gif"}}}"#)
        #expect(braze.first?.dialect == .braze && braze.first?.options.typeHint == "gif")
        #expect(braze.first?.locations == [[.key("ab"), .key("att"), .key("url")]])
        let ct = try requests(#"{"ct_mediaUrl":"https://x/c.jpg","ct_mediaType":"image"}"#)
        #expect(ct.first?.dialect == .clevertap && ct.first?.options.typeHint == "image")
        let itbl = try requests(#"{"itbl":{"attachment-url":"https://x/i.jpg"}}"#)
        #expect(itbl.first?.dialect == .iterable)
        let cio = try requests(#"{"CIO-Delivery-ID":"d","CIO-Delivery-Token":"t","CIO":{"push":{"image":"https://x/cio.jpg"}}}"#)
        #expect(cio.first?.dialect == .customerio)
    }

    /// `thumbnail_id` keeps the order and hides every other thumbnail; an empty `urls` is no
    /// media; a crop outside the unit square drops the whole media payload, as the SDK does.
    @Test func airshipRules() throws {
        let key = "com.urbanairship.media_attachment"
        let r = try requests(#"{"\#(key)":{"urls":[{"url":"https://x/1","url_id":"a"},{"url":"https://x/2","url_id":"b"}],"thumbnail_id":"b"}}"#)
        #expect(r.map(\.id) == ["a", "b"])
        #expect(r.map(\.options.thumbnailHidden) == [true, nil])
        #expect(try requests(#"{"\#(key)":{"urls":[],"url":"https://x/u"}}"#).isEmpty)
        for crop in [#"{"x":-0.1,"y":0,"width":0.5,"height":0.5}"#, #"{"x":0.6,"y":0,"width":0.5,"height":0.5}"#,
                     #"{"x":0,"y":0,"width":1.5,"height":1}"#, #""half""#] {
            #expect(try requests(#"{"\#(key)":{"url":"https://x/u","options":{"crop":\#(crop)}}}"#).isEmpty, "\(crop)")
        }
    }

    /// `os_data.att` when there is an `os_data`, top-level `att` only without one; a bundled file
    /// (not http/https) is left for the device.
    @Test func oneSignalRules() throws {
        #expect(try requests(#"{"os_data":{"att":{"a":"https://x/a"}},"att":{"b":"https://x/b"}}"#).map(\.id) == ["a"])
        #expect(try requests(#"{"os_data":{"i":"n"},"att":{"b":"https://x/b"}}"#).isEmpty)
        #expect(try requests(#"{"att":{"local":"promo.png","web":"HTTPS://x/w"}}"#).map(\.id) == ["web"])
    }

    /// Each vendor's key, where it is rewritten, its type field, and its gate.
    @Test func everyVendor() throws {
        let klaviyo = try requests(#"{"body":{"_k":"x"},"rich-media":"https://x/k.webp","rich-media-type":"webp"}"#)
        #expect(klaviyo.first?.dialect == .klaviyo)
        #expect(klaviyo.first?.typeHint == TypeHintField(path: [.key("rich-media-type")], form: .fileExtension, addWhenMissing: true))
        #expect(try requests(#"{"rich-media":"https://x/k.webp"}"#).isEmpty)  // not a Klaviyo push without body._k

        let pushwoosh = try requests(#"{"attachment":"https://x/p.jpg"}"#)
        #expect((pushwoosh.first?.dialect, pushwoosh.first?.locations) == (.pushwoosh, [[.key("attachment")]]))

        let batch = try requests(#"{"com.batch":{"at":{"u":"https://x/b.heic","t":"public.heic"}}}"#)
        #expect(batch.first?.locations == [[.key("com.batch"), .key("at"), .key("u")]])
        #expect(batch.first?.typeHint?.path == [.key("com.batch"), .key("at"), .key("t")])
        #expect(try requests(#"{"com.batch":{"at":{"u":"https://x/b.heic"}}}"#).isEmpty)  // the SDK needs both

        #expect(try requests(#"{"mp":{"m":1},"mp_media_url":"https://x/m.gif"}"#).first?.dialect == .mixpanel)
        #expect(try requests(#"{"mp_media_url":"https://x/m.gif"}"#).isEmpty)

        let notifee = try requests(#"""
        {"notifee_options":{"image":"https://x/fallback.jpg","ios":{"attachments":[
          {"url":"https://x/n.avif","typeHint":"public.avif","thumbnailHidden":true,"thumbnailTime":2,
           "thumbnailClippingRect":{"x":0,"y":0.1,"width":0.5,"height":0.5}},{"url":"https://x/second.jpg"}]}}}
        """#)
        #expect(notifee.map(\.url) == ["https://x/n.avif"])  // the first attachment only
        #expect(notifee.first?.options == MediaOptions(clippingRect: .init(x: 0, y: 0.1, width: 0.5, height: 0.5), thumbnailTime: 2,
                                                       thumbnailHidden: true, typeHint: "public.avif"))
        #expect(notifee.first?.typeHint?.form == .typeIdentifier)
        #expect(try requests(#"{"notifee_options":{"image":"https://x/i.jpg"}}"#).first?.locations == [[.key("notifee_options"), .key("image")]])

        #expect(try requests(#"{"body":{"_richContent":{"image":"https://x/e.jpg"}}}"#).first?.dialect == .expo)
        #expect(try requests(#"{"_mediaUrl":"https://x/s.mp4","_mediaAlt":"text"}"#).first?.dialect == .salesforce)
        #expect(try requests(#"{"adb_media":"https://x/a.png"}"#).first?.dialect == .adobe)

        #expect(try requests(#"{"CIO":{"push":{"image":"https://x/c.png"}}}"#).isEmpty)  // no delivery id and token
    }

    /// The duplicate-key check's list holds every top-level key a reader reads, in every sample.
    @Test func theTopLevelKeysCoverEverySample() throws {
        for name in listDirectory(Fixtures.payloadDirectory) where name.hasSuffix(".json") {
            let root = try Payload(bytes: Fixtures.bytes(name, in: Fixtures.payloadDirectory)).root
            for request in reader.requests(in: root) {
                for location in request.locations + [request.typeHint?.path].compactMap({ $0 }) {
                    guard case .key(let key)? = location.first else { continue }
                    #expect(reader.topLevelKeys.contains(key), "\(name): \(key)")
                }
            }
        }
    }

    @Test func genericKeysAreConfigurable() throws {
        #expect(try requests(#"{"media-url":"https://x/m.jpg","image-url":"https://x/i.jpg"}"#).map(\.id) == ["image-url", "media-url"])
        let custom = DialectReader(genericKeys: ["pic"])
        #expect(custom.requests(in: try Payload(bytes: Array(#"{"pic":"https://x/p.jpg","media-url":"https://x/m.jpg"}"#.utf8)).root).map(\.id) == ["pic"])
    }

    /// The spellings hand-written payloads use are read by default, in the documented order.
    @Test func handWrittenSpellingsAreRead() throws {
        for key in DialectReader.defaultGenericKeys {
            let found = try requests("{\"aps\":{},\"\(key)\":\"https://x/\(key).jpg\"}")
            #expect(found.map(\.url) == ["https://x/\(key).jpg"])
            #expect(found.first?.locations == [[.key(key)]])
        }
        let all = DialectReader.defaultGenericKeys.reversed().map { "\"\($0)\":\"https://x/\($0).jpg\"" }.joined(separator: ",")
        #expect(try requests("{\(all)}").map(\.id) == Array(DialectReader.defaultGenericKeys.prefix(4)))
    }

    /// `KEY=TYPEKEY` names a companion type field, rewritten in the form it was written in.
    @Test func genericKeysCanNameATypeField() throws {
        let reader = DialectReader(genericKeys: ["/d/img=/d/kind", "pic=pic_type"])
        let root = try Payload(bytes: Array(#"{"d":{"img":"https://x/a.webp","kind":"image/webp"},"pic":"https://x/b.heic"}"#.utf8)).root
        let found = reader.requests(in: root)
        #expect(found.map(\.id) == ["/d/img", "pic"])
        #expect(found[0].typeHint == TypeHintField(path: [.key("d"), .key("kind")], form: .asWritten))
        #expect(found[1].typeHint?.path == [.key("pic_type")])
        let jpeg = TypeHintField.Media(kind: "image", fileExtension: "jpg", uti: "public.jpeg", mime: "image/jpeg")
        let field = TypeHintField(path: [], form: .asWritten)
        #expect([field.value(for: jpeg, replacing: "image/webp"), field.value(for: jpeg, replacing: "public.heic"),
                 field.value(for: jpeg, replacing: "webp")] == ["image/jpeg", "public.jpeg", "jpg"])
        #expect(reader.topLevelKeys.isSuperset(of: ["d", "pic", "pic_type"]))
    }

    /// A JSON Pointer reaches a nested URL (and is where the rewrite goes); escapes as RFC 6901.
    @Test func jsonPointersReachNestedKeys() throws {
        let reader = DialectReader(genericKeys: ["/data/media/1/url", "/a~1b/c~0d"])
        let root = try Payload(bytes: Array(#"{"data":{"media":[{"url":"https://x/0"},{"url":"https://x/1"}]},"a/b":{"c~d":"https://x/e"}}"#.utf8)).root
        let found = reader.requests(in: root)
        #expect(found.map(\.url) == ["https://x/1", "https://x/e"])
        #expect(found.first?.locations == [[.key("data"), .key("media"), .index(1), .key("url")]])
        #expect(JSONPointer("no-slash") == nil)
        #expect(JSONPointer("/bad~2escape") == nil)
        #expect(JSONPointer("/a/01")?.path(in: .object(root)) == nil)
        // A repeated key under a pointer's first step makes the payload ambiguous, as for any dialect.
        let twice = try Payload(bytes: Array(#"{"data":{"media":[],"media":[{"url":"https://x/0"}]}}"#.utf8)).root
        #expect(reader.repeatedKey(in: twice) == "data.media")
    }

    @Test func duplicatesMergeAndTheCountIsCapped() throws {
        let r = try requests(#"{"fcm_options":{"image":"https://x/same.jpg"},"media-url":"https://x/same.jpg","att":{"a":"https://x/1","b":"https://x/2","c":"https://x/3","d":"https://x/4"}}"#)
        #expect(r.count == 4)
        #expect(r[0].locations.count == 2)
        #expect(r.map(\.url) == ["https://x/same.jpg", "https://x/1", "https://x/2", "https://x/3"])
    }

    @Test func ignoresEmptyAndNonStringURLs() throws {
        #expect(try requests(#"{"fcm_options":{"image":"  "},"media-url":42,"att":{"a":null}}"#).isEmpty)
    }
}

@Suite struct BudgetTests {
    func entry(_ i: Int) -> AttachmentEntry {
        AttachmentEntry(id: "a\(i)", url: "https://cdn.example.com/media/\(String(repeating: "f", count: 64)).jpg",
                        type: "public.jpeg", bytes: 123_456, width: 1080, height: 720,
                        thumbnail: .init(url: "https://cdn.example.com/media/\(String(repeating: "e", count: 64)).jpg", width: 320, height: 213))
    }

    @Test func fitsUntrimmedWhenThereIsRoom() throws {
        let bytes = try #require(PayloadBudget.fit(JSONObject(["aps": .object(JSONObject())]), entries: [entry(0)], key: "attachments", maxBytes: 4096))
        #expect(String(decoding: bytes, as: UTF8.self).contains("\"thumbnail\""))
    }

    @Test func trimsOptionalFieldsBeforeGivingUp() throws {
        let root = JSONObject(["aps": .object(JSONObject()), "pad": .string(String(repeating: "p", count: 3400))])
        let four = (0..<4).map(entry)
        let bytes = try #require(PayloadBudget.fit(root, entries: four, key: "attachments", maxBytes: 4096))
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(bytes.count <= 4096)
        #expect(!text.contains("\"bytes\""))
        #expect(text.contains("\"a3\""))
        let tooBig = JSONObject(["pad": .string(String(repeating: "p", count: 4000))])
        #expect(PayloadBudget.fit(tooBig, entries: four, key: "attachments", maxBytes: 4096) == nil)
    }
}
