@testable import Attache
@testable import AttacheEnrichment
import AttacheIsolation
import AttacheMedia
import AttachePayload
import AttacheSupport
import AttacheTestTraits
import AttacheTesting
import Logging
import Synchronization
import Testing

/// On the tests' own threads: half the dialect cases start a sandboxed helper, which waits for
/// it in a plain loop.
@Suite(.onTestThreads) struct EnrichTests {
    @Test(arguments: [
        ("fcm.json", ["public.jpeg"]), ("onesignal.json", ["public.png", "public.png"]),
        ("airship.json", ["public.jpeg", "public.jpeg"]), ("braze.json", ["com.compuserve.gif"]),
        ("clevertap.json", ["public.jpeg"]), ("iterable.json", ["public.jpeg"]), ("customerio.json", ["public.png"]),
        ("generic.json", ["public.png"]), ("heic.json", ["public.jpeg"]), ("webp.json", ["public.jpeg"]),
        ("animated-webp.json", ["public.mpeg-4"]), ("klaviyo.json", ["public.png"]), ("pushwoosh.json", ["public.jpeg"]),
        ("batch.json", ["public.jpeg"]), ("mixpanel.json", ["com.compuserve.gif"]), ("notifee.json", ["public.jpeg"]),
        ("expo.json", ["public.jpeg"]), ("salesforce.json", ["public.mpeg-4"]), ("adobe.json", ["public.png"]),
        ("handwritten.json", ["public.jpeg"]),
    ], [Isolation.inProcess, .process])
    func everyDialectIsEnriched(_ sample: (name: String, types: [String]), _ isolation: Isolation) async throws {
        let (name, types) = sample
        let (h, e) = try Harness.started {
            $0.isolation = isolation
            $0.decoders.helpers = 1  // one helper per case: 23 samples, each its own enrichment
        }
        defer { h.stop(e) }
        let input = h.sample(name)
        let emission = try await e.enrich(input)
        #expect(emission.outcome == .enriched)
        let out = try json(emission.bytes)
        let original = try json(input)
        // Every original key, in order, then the one added key.
        #expect(out.keys == original.keys + ["attachments"])
        let entries = out["attachments"]?.arrayValue ?? []
        #expect(entries.compactMap { $0.objectValue?["type"]?.stringValue } == types)
        for entry in entries {
            let thumb = entry.objectValue?["thumbnail"]?.objectValue
            #expect(thumb?["url"]?.stringValue?.hasPrefix("file://\(h.mediaDirectory)/") == true)
            #expect(entry.objectValue?["width"] != nil)
        }
        #expect(emission.bytes.count <= 4096)
        // Nothing but stored media beside the process's scratch directory, and no temp file in it.
        #expect(listDirectory(h.mediaDirectory).filter { $0.hasPrefix(".") } == [ScratchSpace.folderName])
        #expect(await eventually { h.temporaryFiles().isEmpty })
    }

    /// An animated WebP goes to the device as a movie, with a GIF copy of it beside (iOS plays a
    /// GIF attachment by itself): both stored, the copy within Apple's image cap.
    @Test func anAnimationsMovieHasAGIFCopy() async throws {
        let (h, e) = try Harness.started()
        defer { h.stop(e) }
        let emission = try await e.enrich(h.sample("animated-webp.json"))
        #expect(emission.outcome == .enriched)
        let entry = try #require(try json(emission.bytes)["attachments"]?.arrayValue?.first?.objectValue)
        #expect(entry["type"]?.stringValue == "public.mpeg-4")
        let gif = try #require(entry["gif"]?.objectValue)
        let url = try #require(gif["url"]?.stringValue)
        #expect(url.hasPrefix("file://\(h.mediaDirectory)/") && url.hasSuffix(".gif"))
        let stored = try readFile(String(url.dropFirst("file://".count)))
        #expect(gif["bytes"]?.doubleValue == Double(stored.count) && stored.count <= MediaLimits().imageBytes)
        #expect(Array(stored.prefix(6)) == Array("GIF89a".utf8))
        #expect(gif["width"]?.doubleValue == 320 && gif["height"]?.doubleValue == 240)
    }

    /// A HEIC goes to the device as the JPEG made from it; the entry and the report say so, and
    /// the entry carries the thumbnail's placeholder hash.
    @Test func aConvertedImageSaysWhatItWas() async throws {
        let (h, e) = try Harness.started()
        defer { h.stop(e) }
        let emission = try await e.enrich(h.sample("heic.json"))
        #expect(emission.outcome == .enriched)
        let entry = try #require(try json(emission.bytes)["attachments"]?.arrayValue?.first?.objectValue)
        #expect(entry["type"]?.stringValue == "public.jpeg")
        #expect(entry["url"]?.stringValue?.hasSuffix(".jpg") == true)
        #expect(entry["converted-from"]?.stringValue == "heic")
        #expect((entry["width"]?.numberText, entry["height"]?.numberText) == ("640", "480"))
        let hash = try #require(entry["thumbhash"]?.stringValue)
        #expect((28...44).contains(hash.count))  // ~25 bytes in base64
        let report = try #require(emission.report.attachments.first)
        #expect((report.format, report.convertedFrom) == (.heic, .heic))
    }

    /// Every converted kind through `enrich`: a JPEG, PNG or GIF with a thumbnail and a
    /// placeholder, inside the APNs budget.
    @Test(arguments: [("photo.jxl", "public.jpeg"), ("photo.avif", "public.jpeg"), ("alpha.webp", "public.png"),
                      ("alpha.heic", "public.png"), ("animated.avif", "public.mpeg-4")])
    func everyConvertedKindIsAttached(_ name: String, _ type: String) async throws {
        let (h, e) = try Harness.started()
        defer { h.stop(e) }
        let emission = try await e.enrich(h.payload(#"{"aps":{"alert":"x","mutable-content":1},"image-url":"ORIGIN/\#(name)"}"#))
        #expect(emission.outcome == .enriched)
        #expect(emission.bytes.count <= 4096)
        let entry = try #require(try json(emission.bytes)["attachments"]?.arrayValue?.first?.objectValue)
        #expect(entry["type"]?.stringValue == type)
        #expect(entry["thumbnail"] != nil && entry["thumbhash"] != nil)
        #expect(entry["converted-from"]?.stringValue == name.split(separator: ".").last.map(String.init))
    }

    /// Over the 4 KB budget, the placeholder hash is the first thing left out.
    @Test func thePlaceholderIsDroppedFirst() throws {
        let entry = AttachmentEntry(id: "a", url: "https://media.example/a.jpg", type: "public.jpeg", bytes: 1000, width: 10, height: 10,
                                    thumbnail: .init(url: "https://media.example/t.jpg", width: 5, height: 5),
                                    thumbhash: String(repeating: "A", count: 36), convertedFrom: .heic)
        let full = JSONWriter.bytes(.array([entry.json()]))
        let root = JSONObject(["aps": .object(JSONObject(["alert": .string(String(repeating: "x", count: 100))]))])
        let budget = JSONWriter.bytes(.object(root)).count + full.count + 15 - 20  // "attachments": and a little less than all
        let fitted = try #require(PayloadBudget.fit(root, entries: [entry], key: "attachments", maxBytes: budget))
        let kept = try #require(try json(fitted)["attachments"]?.arrayValue?.first?.objectValue)
        #expect(kept["thumbhash"] == nil)
        #expect(kept["bytes"] != nil && kept["thumbnail"] != nil)
    }

    @Test func airshipContentAndOptionsGoIntoThePayload() async throws {
        let (h, e) = try Harness.started()
        defer { h.stop(e) }
        let out = try json(try await e.enrich(h.sample("airship.json")).bytes)
        let alert = out["aps"]?.objectValue?["alert"]?.objectValue
        #expect(alert?["title"]?.stringValue == "Airship title")
        #expect(alert?["body"]?.stringValue == "Airship body")
        let list = try #require(out["attachments"]?.arrayValue)
        let entries = list.compactMap(\.objectValue)
        #expect(entries.map { $0["id"]?.stringValue } == ["hero", "detail"])  // order kept
        #expect(entries[0]["thumbnail-clipping-rect"]?.objectValue?["width"]?.numberText == "0.5")
        // thumbnail_id "detail": every other attachment's thumbnail is hidden.
        #expect(entries.map { $0["thumbnail-hidden"] } == [.bool(true), .bool(false)])
    }

    @Test func passthroughIsByteIdentical() async throws {
        let (h, e) = try Harness.started()
        defer { h.stop(e) }
        for name in ["passthrough-not-mutable.json", "passthrough-no-media.json"] {
            let input = h.sample(name)
            let emission = try await e.enrich(input)
            #expect(emission.bytes == input)
            #expect(emission.outcome == .passthrough)
        }
        let odd = Array("{ \"aps\" : {\"alert\":\"x\", \"mutable-content\": 0 },\n \"n\": 1.0e0 }\n".utf8)
        let emission = try await e.enrich(odd)
        #expect(emission.bytes == odd)
        #expect(emission.reason == .notMutable)
        #expect(h.origin.statistics.requests == 0)
    }

    /// `start` (a relay's payload answered from its event loop): media not yet cached is left to
    /// wait for, with nothing fetched until it is waited for, and then the answer `enrich` gives;
    /// once cached, the answer at once is the one `enrich` gives, byte for byte, with no request to
    /// the origin.
    @Test func atOnceOnlyWhatIsCachedAndTheSameAnswer() async throws {
        func atOnce(_ bytes: [UInt8]) throws -> Emission? {
            guard case .done(let emission)? = try e.start(bytes) else { return nil }
            return emission
        }
        let (h, e) = try Harness.started { $0.cache = MediaCache.Configuration() }
        defer { h.stop(e) }
        let one = h.payload(#"{"aps":{"alert":"x","mutable-content":1},"image-url":"ORIGIN/photo.jpg"}"#)
        let two = h.payload(#"{"aps":{"alert":"x","mutable-content":1},"att":{"a":"ORIGIN/photo.jpg","b":"ORIGIN/alpha.png"}}"#)
        guard case .waiting(let waiting)? = try e.start(one) else {
            Issue.record("a payload whose media is not cached was answered at once")
            return
        }
        #expect(h.origin.statistics.requests == 0)
        let fetched = await waiting.emission()
        #expect(fetched.outcome == .enriched)
        #expect(h.origin.statistics.requests == 1)
        let cached = try #require(try atOnce(one))
        let again = try await e.enrich(one)
        #expect(cached.bytes == again.bytes)
        #expect(fetched.bytes == again.bytes)
        #expect(cached.outcome == .enriched)
        #expect(cached.report.attachments.map(\.cache) == [.hit])
        #expect(cached.report.attachments.map(\.outcome) == again.report.attachments.map(\.outcome))
        // One of two media cached: the payload waits for the other, so not at once.
        #expect(try atOnce(two) == nil)
        #expect(h.origin.statistics.requests == 1)
        // What the runtime answers itself needs no extension, and is answered at once.
        let plain = h.sample("passthrough-not-mutable.json")
        #expect(try atOnce(plain)?.bytes == plain)
        #expect(throws: PayloadError.self) { try e.start(Array("[1]".utf8)) }
    }

    @Test(arguments: [
        ("fallback-truncated.json", Reason.invalidMedia),
        ("fallback-address-denied.json", .addressDenied), ("fallback-key-conflict.json", .keyConflict),
    ])
    func fallbackIsByteIdentical(_ name: String, _ reason: Reason) async throws {
        let (_, emission) = try await Harness.expectOriginal({ $0.sample(name) }, reason: reason)
        #expect(emission.outcome == .fallback)
    }

    @Test func keyConflictFetchesNothing() async throws {
        let (h, e) = try Harness.started()
        defer { h.stop(e) }
        _ = try await e.enrich(h.sample("fallback-key-conflict.json"))
        #expect(h.origin.statistics.requests == 0)
    }

    /// The key conflict is about the configured key: `media` taken already is one (nothing fetched),
    /// an `attachments` of the sender's own is not (the array goes under `media`).
    @Test func theConflictIsWithTheConfiguredKey() async throws {
        let (h, e) = try Harness.started { $0.runtime.attachmentsKey = "media" }
        defer { h.stop(e) }
        let taken = try await e.enrich(h.payload(#"{"aps":{"alert":"x","mutable-content":1},"image-url":"ORIGIN/alpha.png","media":1}"#))
        #expect(taken.reason == .keyConflict)
        #expect(h.origin.statistics.requests == 0)
        let free = try await e.enrich(h.payload(#"{"aps":{"alert":"x","mutable-content":1},"image-url":"ORIGIN/alpha.png","attachments":1}"#))
        #expect(free.outcome == .enriched)
        #expect(try json(free.bytes)["media"]?.arrayValue?.count == 1)
        #expect(try json(free.bytes)["attachments"] == .int(1))
    }

    /// A key Attache reads or writes, given twice: the payload goes out unchanged, nothing is fetched.
    @Test(arguments: [
        #"{"aps":{"alert":"x","mutable-content":1},"aps":{"alert":"y"},"image-url":"ORIGIN/alpha.png"}"#,
        #"{"aps":{"alert":"x","mutable-content":0,"mutable-content":1},"image-url":"ORIGIN/alpha.png"}"#,
        #"{"aps":{"alert":{"title":"a","title":"b"},"mutable-content":1},"image-url":"ORIGIN/alpha.png"}"#,
        #"{"aps":{"alert":"x","mutable-content":1},"image-url":"ORIGIN/alpha.png","attachments":[],"attachments":1}"#,
        #"{"aps":{"alert":"x","mutable-content":1},"image-url":"ORIGIN/alpha.png","image-url":"ORIGIN/photo.jpg"}"#,
        #"{"aps":{"alert":"x","mutable-content":1},"fcm_options":{"image":"ORIGIN/alpha.png","image":"ORIGIN/photo.jpg"}}"#,
        #"{"aps":{"alert":"x","mutable-content":1},"ab":{"att":{"url":"ORIGIN/alpha.png","type":"png","type":"jpg"}}}"#,
    ])
    func aRepeatedKeyWhereAttacheReadsIsAmbiguous(_ json: String) async throws {
        let (h, _) = try await Harness.expectOriginal({ $0.payload(json) }, reason: .ambiguousPayload)
        #expect(h.origin.statistics.requests == 0)
    }

    @Test func aRepeatedKeyInCustomDataPassesThrough() async throws {
        let (h, e) = try Harness.started()
        defer { h.stop(e) }
        let emission = try await e.enrich(h.payload(#"{"aps":{"alert":"x","mutable-content":1},"image-url":"ORIGIN/alpha.png","custom":{"k":1,"k":2}}"#))
        #expect(emission.outcome == .enriched)
        #expect(String(decoding: emission.bytes, as: UTF8.self).contains(#""custom":{"k":1,"k":2}"#))
    }

    /// A failed attachment is logged once, on the caller's logger (with its request id).
    @Test func eachFailedAttachmentIsLoggedOnceOnTheCallersLogger() async throws {
        let (h, e) = try Harness.started()
        defer { h.stop(e) }
        let records = Records()
        var logger = Logger(label: "test") { _ in RecordingHandler(records: records) }
        logger[metadataKey: "attache.request.id"] = "req-7"
        let emission = try await e.enrich(h.payload(#"{"aps":{"alert":"x","mutable-content":1},"image-url":"ORIGIN/error-page.html"}"#), logger: logger)
        #expect(emission.reason == .unsupportedType)
        let failures = records.lines.withLock { $0 }.filter { $0.message == "attachment failed" }
        #expect(failures.count == 1)
        #expect(failures.first?.metadata["attache.request.id"] == "req-7")
        #expect(failures.first?.metadata["attache.reason"] == "unsupported-type")
    }

    @Test func partialWhenSomeMediaFails() async throws {
        let (h, e) = try Harness.started()
        defer { h.stop(e) }
        let emission = try await e.enrich(h.sample("partial.json"))
        #expect(emission.outcome == .partial)
        #expect(emission.reason == .unsupportedType)
        #expect(try json(emission.bytes)["attachments"]?.arrayValue?.count == 1)
        #expect(emission.report.attachments.map(\.outcome) == [.attached, .failed])
    }

    @Test func overBudgetTrimsThenFallsBack() async throws {
        let h = try Harness()
        defer { h.stop() }
        let input = h.sample("onesignal.json")
        // Room for the payload and trimmed entries, not full ones: trimmed, still enriched.
        let trimmed = try h.enrichment { $0.runtime.maxPayloadBytes = input.count + 330 }
        defer { trimmed.shutdown() }
        let t = try await trimmed.enrich(input)
        #expect(t.outcome == .enriched)
        #expect(t.bytes.count <= input.count + 330)
        #expect(!String(decoding: t.bytes, as: UTF8.self).contains("\"thumbnail\""))
        // No room at all: the original, with payload-too-large.
        let tight = try h.enrichment { $0.runtime.maxPayloadBytes = input.count + 20 }
        defer { tight.shutdown() }
        let f = try await tight.enrich(input)
        #expect(f.outcome == .fallback)
        #expect(f.reason == .payloadTooLarge)
        #expect(f.bytes == input)
    }

    @Test func publicBaseURLRewritesTheDialectsOwnField() async throws {
        let (h, e) = try Harness.startedWithPublicURLs()
        defer { h.stop(e) }
        let out = try json(try await e.enrich(h.sample("fcm.json")).bytes)
        let image = try #require(out["fcm_options"]?.objectValue?["image"]?.stringValue)
        #expect(image.hasPrefix("https://cdn.example.com/m/"))
        #expect(image.hasSuffix(".jpg"))
        let name = String(image.dropFirst("https://cdn.example.com/m/".count))
        #expect(name.count == 64 + 4)
        #expect(listDirectory(h.mediaDirectory).contains(name))
        #expect(out["attachments"]?.arrayValue?.first?.objectValue?["url"]?.stringValue == image)
    }

    /// A URL rewritten to a copy of another format takes the vendor's type field with it: the
    /// SDK names the saved file by it, and iOS judges the attachment by that name.
    @Test(arguments: [
        (#"{"aps":{"alert":"x","mutable-content":1},"ab":{"att":{"url":"ORIGIN/photo.webp","type":"webp"}}}"#,
         [JSONPathComponent.key("ab"), .key("att"), .key("type")], "jpg", ".jpg"),
        (#"{"aps":{"alert":"x","mutable-content":1},"ab":{"att":{"url":"ORIGIN/movie.webp","type":"webp"}}}"#,
         [.key("ab"), .key("att"), .key("type")], "mp4", ".mp4"),
        (#"{"aps":{"alert":"x","mutable-content":1},"ct_mediaUrl":"ORIGIN/animated.avif","ct_mediaType":"image"}"#,
         [.key("ct_mediaType")], "video", ".mp4"),
        (#"{"aps":{"alert":"x","mutable-content":1},"ct_mediaUrl":"ORIGIN/alpha.heic","ct_mediaType":"image"}"#,
         [.key("ct_mediaType")], "image", ".png"),
    ])
    func typeHintsFollowTheRewrittenURL(_ payload: String, _ path: [JSONPathComponent], _ type: String, _ suffix: String) async throws {
        let (h, e) = try Harness.startedWithPublicURLs()
        defer { h.stop(e) }
        let emission = try await e.enrich(h.payload(payload))
        #expect(emission.outcome == .enriched)
        let out = JSONValue.object(try json(emission.bytes))
        #expect(out[path: path]?.stringValue == type)
        let url = try #require(out[path: [.key("attachments"), .index(0), .key("url")]]?.stringValue)
        #expect(url.hasSuffix(suffix))
    }

    /// The vendors' own samples with a public base URL: each type field follows its URL to the
    /// copy, in the form its SDK reads (a file extension, a UTI, a MIME type).
    @Test(arguments: [
        ("klaviyo.json", [JSONPathComponent.key("rich-media-type")], "png"),
        ("batch.json", [.key("com.batch"), .key("at"), .key("t")], "public.jpeg"),
        ("notifee.json", [.key("notifee_options"), .key("ios"), .key("attachments"), .index(0), .key("typeHint")], "public.jpeg"),
    ])
    func vendorTypeFieldsFollowTheCopy(_ name: String, _ path: [JSONPathComponent], _ type: String) async throws {
        let (h, e) = try Harness.startedWithPublicURLs()
        defer { h.stop(e) }
        let out = JSONValue.object(try json(try await e.enrich(h.sample(name)).bytes))
        #expect(out[path: path]?.stringValue == type)
    }

    /// Where an SDK attaches nothing without a type (Braze, CleverTap) or assumes a wrong one
    /// (Klaviyo's jpeg), the field is added with the URL rewrite; a MIME type stays a MIME type.
    @Test func missingTypeFieldsAreAddedAndFormsKept() async throws {
        let (h, e) = try Harness.startedWithPublicURLs()
        defer { h.stop(e) }
        let braze = JSONValue.object(try json(try await e.enrich(h.payload(
            #"{"aps":{"alert":"x","mutable-content":1},"ab":{"att":{"url":"ORIGIN/animated.gif"}}}"#)).bytes))
        #expect(braze[path: [.key("ab"), .key("att"), .key("type")]]?.stringValue == "gif")
        let klaviyo = JSONValue.object(try json(try await e.enrich(h.payload(
            #"{"aps":{"alert":"x","mutable-content":1},"body":{"_k":"1"},"rich-media":"ORIGIN/alpha.png"}"#)).bytes))
        #expect(klaviyo[path: [.key("rich-media-type")]]?.stringValue == "png")
        let batch = JSONValue.object(try json(try await e.enrich(h.payload(
            #"{"aps":{"alert":"x","mutable-content":1},"com.batch":{"at":{"u":"ORIGIN/photo.webp","t":"image/webp"}}}"#)).bytes))
        #expect(batch[path: [.key("com.batch"), .key("at"), .key("t")]]?.stringValue == "image/jpeg")
        // Without a public base URL the URL stays the original, and so does every type field.
        let (h2, plain) = try Harness.started()
        defer { h2.stop(plain) }
        let kept = JSONValue.object(try json(try await plain.enrich(h2.sample("klaviyo.json")).bytes))
        #expect(kept[path: [.key("rich-media-type")]]?.stringValue == "webp")
    }

    /// An FCM v1 send request: its APNs payload enriched as FCM will deliver it, the iOS URLs
    /// pointed at the validated copy, an Android copy (a JPEG within 1 MB, at most 1350 px, not
    /// cropped) added; every other field as it came.
    @Test func anFCMSendRequestIsEnrichedForBothPlatforms() async throws {
        let (h, e) = try Harness.startedWithPublicURLs()
        defer { h.stop(e) }
        let input = h.sample("fcm-v1.json")
        let emission = try await e.enrich(input)
        #expect(emission.outcome == .enriched)
        let out = JSONValue.object(try json(emission.bytes)), original = JSONValue.object(try json(input))
        let message: [JSONPathComponent] = [.key("message")]
        let ios = try #require(out[path: message + [.key("notification"), .key("image")]]?.stringValue)
        #expect(ios.hasPrefix("https://cdn.example.com/m/") && ios.hasSuffix(".jpg"))
        #expect(out[path: message + [.key("apns"), .key("fcm_options"), .key("image")]]?.stringValue == ios)
        let payload = try #require(out[path: message + [.key("apns"), .key("payload")]]?.objectValue)
        #expect(payload.members.map(\.key) == ["aps", "campaign", "attachments"])  // no fcm_options left behind
        #expect(payload["attachments"]?.arrayValue?.first?.objectValue?["url"]?.stringValue == ios)
        let android = try #require(out[path: message + [.key("android"), .key("notification"), .key("image")]]?.stringValue)
        #expect(android != ios && android.hasSuffix(".jpg"))
        let copy = Fixtures.bytes(String(android.dropFirst("https://cdn.example.com/m/".count)), in: h.mediaDirectory)
        #expect(!copy.isEmpty && copy.count <= 1_000_000)
        let header = try ImagePipeline().inspect(copy)
        #expect((header.format, max(header.width, header.height)) == (.jpeg, 1350))  // photo.jpg is 1600x1200
        // Everything else as it came.
        for path: [JSONPathComponent] in [[.key("message"), .key("token")], [.key("message"), .key("data")],
                                          [.key("message"), .key("apns"), .key("headers")], [.key("validate_only")],
                                          [.key("message"), .key("android"), .key("priority")],
                                          [.key("message"), .key("android"), .key("notification"), .key("channel_id")]] {
            #expect(out[path: path] == original[path: path], "\(path)")
        }
        #expect(JSONWriter.bytes(out[path: message + [.key("apns"), .key("payload"), .key("campaign")]]!) == Array(#"{"id":42,"ratio":1.50}"#.utf8))
        #expect(emission.report.attachments.first?.androidURL == android)
    }

    /// Google's own image example: the alert lives only in `message.notification`, and `aps` holds
    /// `mutable-content` alone. FCM builds `aps.alert` from the notification on delivery, so the
    /// request is enriched (not `not-mutable`); the alert is not written into it. Its explicit
    /// Android image names the Android copy, made from the iOS image's download (the same URL);
    /// `webpush` and the rest come out as they came.
    @Test func anFCMRequestWhoseAlertIsInItsNotificationIsEnriched() async throws {
        let (h, e) = try Harness.startedWithPublicURLs()
        defer { h.stop(e) }
        let input = h.sample("fcm-v1-notification-alert.json")
        let emission = try await e.enrich(input)
        #expect(emission.outcome == .enriched, "\(emission.report.json)")
        let out = JSONValue.object(try json(emission.bytes)), original = JSONValue.object(try json(input))
        let message: [JSONPathComponent] = [.key("message")]
        let aps = try #require(out[path: message + [.key("apns"), .key("payload"), .key("aps")]]?.objectValue)
        #expect(aps.members.map(\.key) == ["mutable-content"])  // FCM adds the alert, not us
        let ios = try #require(out[path: message + [.key("apns"), .key("fcm_options"), .key("image")]]?.stringValue)
        #expect(ios.hasPrefix("https://cdn.example.com/m/"))
        for key in ["webpush", "topic", "notification"] {
            #expect(JSONWriter.bytes(out[path: message + [.key(key)]]!) == JSONWriter.bytes(original[path: message + [.key(key)]]!), "\(key)")
        }
        let android = try #require(out[path: message + [.key("android"), .key("notification"), .key("image")]]?.stringValue)
        #expect(android != ios && android.hasPrefix("https://cdn.example.com/m/"))
        #expect(emission.report.attachments.map(\.androidURL) == [android])
        #expect(h.origin.statistics.requestsByPath["/photo.jpg"] == 1)  // one download for both
    }

    /// Android has no extension to gate: a request's Android image is replaced by the validated
    /// copy whether or not its APNs part is mutable, from a download of its own when it names
    /// another URL; the APNs part is then as it came, byte for byte.
    @Test func theAndroidImageIsCopiedWhateverTheGate() async throws {
        let (h, e) = try Harness.startedWithPublicURLs()
        defer { h.stop(e) }
        let message: [JSONPathComponent] = [.key("message")]
        let google = String(decoding: h.sample("fcm-v1-notification-alert.json"), as: UTF8.self)
        let origin = "http://127.0.0.1:\(h.origin.port)"
        // Without `mutable-content`: the APNs part passes through, the Android image is copied.
        let quiet = Array(google.replacingAll(#""mutable-content":1"#, with: #""badge":1"#).utf8)
        let emission = try await e.enrich(quiet)
        #expect((emission.outcome, emission.reason) == (.enriched, nil), "\(emission.report.json)")
        let out = JSONValue.object(try json(emission.bytes)), original = JSONValue.object(try json(quiet))
        let android = try #require(out[path: message + [.key("android"), .key("notification"), .key("image")]]?.stringValue)
        #expect(android.hasPrefix("https://cdn.example.com/m/") && android.hasSuffix(".jpg"))
        for key in ["apns", "webpush", "topic", "notification"] {
            #expect(JSONWriter.bytes(out[path: message + [.key(key)]]!) == JSONWriter.bytes(original[path: message + [.key(key)]]!), "\(key)")
        }
        let copy = Fixtures.bytes(String(android.dropFirst(Harness.publicBase.count)), in: h.mediaDirectory)
        let header = try ImagePipeline().inspect(copy)
        #expect(header.format == .jpeg && max(header.width, header.height) <= 1350 && copy.count <= 1_000_000)
        #expect(emission.report.attachments.map(\.id) == ["android"])

        // An Android image of its own beside a mutable APNs part: both copies, each from its URL.
        let both = Array(google.replacingAll(#""android":{"notification":{"image":"\#(origin)/photo.jpg"}}"#,
                                             with: #""android":{"notification":{"image":"\#(origin)/alpha.png"}}"#).utf8)
        #expect(both != Array(google.utf8))
        let twice = try await e.enrich(both)
        #expect(twice.outcome == .enriched, "\(twice.report.json)")
        let twiceOut = JSONValue.object(try json(twice.bytes))
        let ios = try #require(twiceOut[path: message + [.key("apns"), .key("fcm_options"), .key("image")]]?.stringValue)
        let own = try #require(twiceOut[path: message + [.key("android"), .key("notification"), .key("image")]]?.stringValue)
        #expect(ios.hasPrefix(Harness.publicBase) && own.hasPrefix(Harness.publicBase) && ios != own)
        #expect(twice.report.attachments.map(\.id).last == "android")
        #expect(h.origin.statistics.requestsByPath["/alpha.png"] == 1)

        // An Android image that is not an image: the request as it came, and why.
        let broken = Array(google.replacingAll(#""mutable-content":1"#, with: #""badge":1"#)
            .replacingAll(#""android":{"notification":{"image":"\#(origin)/photo.jpg"}}"#,
                          with: #""android":{"notification":{"image":"\#(origin)/error-page.html"}}"#).utf8)
        #expect(broken != quiet)
        let refused = try await e.enrich(broken)
        #expect(refused.bytes == broken)
        #expect(refused.outcome == .fallback && refused.reason != nil, "\(refused.report.json)")
    }

    /// `--no-android-copy`, and a service with no public base URL (a file:// URL means nothing to
    /// FCM): the Android image goes as it came, and a request whose APNs part is not mutable
    /// passes through whole.
    @Test func theAndroidCopyCanBeTurnedOff() async throws {
        let quiet = { (h: Harness) in
            Array(String(decoding: h.sample("fcm-v1-notification-alert.json"), as: UTF8.self)
                .replacingAll(#""mutable-content":1"#, with: #""badge":1"#).utf8)
        }
        for tweak: (inout Enrichment.Configuration) -> Void in [
            { $0.storage.publicBaseURL = Harness.publicBase; $0.media.androidCopies = false },
            { _ in },
        ] {
            let (h, e) = try Harness.started(tweak)
            defer { h.stop(e) }
            let input = quiet(h)
            let emission = try await e.enrich(input)
            #expect((emission.outcome, emission.reason, emission.bytes) == (.passthrough, .notMutable, input))
            #expect(h.origin.statistics.requestsByPath.isEmpty)
        }
        // Mutable, copies off: the iOS image is copied, the Android one left as it came.
        let (h, e) = try Harness.started { $0.storage.publicBaseURL = Harness.publicBase; $0.media.androidCopies = false }
        defer { h.stop(e) }
        let input = h.sample("fcm-v1-notification-alert.json")
        let out = JSONValue.object(try json(try await e.enrich(input).bytes)), original = JSONValue.object(try json(input))
        #expect(out[path: [.key("message"), .key("android")]] == original[path: [.key("message"), .key("android")]])
        #expect(out[path: [.key("message"), .key("apns"), .key("fcm_options"), .key("image")]]?.stringValue?.hasPrefix(Harness.publicBase) == true)
    }

    /// Anything short of enriched is the original request, byte for byte; what is not a send
    /// request (another top-level key, no target) is read as an APNs payload.
    @Test func anFCMSendRequestFallsBackWhole() async throws {
        let (h, e) = try Harness.started()
        defer { h.stop(e) }
        let cut = Array(String(decoding: h.sample("fcm-v1.json"), as: UTF8.self).replacingAll("photo.jpg", with: "truncated.jpg").utf8)
        let failed = try await e.enrich(cut)
        #expect((failed.outcome, failed.reason) == (.fallback, .invalidMedia))
        #expect(failed.bytes == cut)
        let quiet = Array(String(decoding: h.sample("fcm-v1.json"), as: UTF8.self).replacingAll(#""mutable-content":1"#, with: #""badge":1"#).utf8)
        let passed = try await e.enrich(quiet)
        #expect((passed.outcome, passed.reason) == (.passthrough, .notMutable))
        #expect(passed.bytes == quiet)
        #expect(FCMSendRequest(try json(h.payload(#"{"message":{"apns":{}}}"#))) == nil)  // no token, fid, topic or condition
        #expect(FCMSendRequest(try json(h.payload(#"{"message":{"token":"t"},"aps":{}}"#))) == nil)
        #expect(FCMSendRequest(try json(h.payload(#"{"message":{"topic":"news"}}"#))) != nil)
        // firebase-admin 7 names the device by its installation ID.
        #expect(FCMSendRequest(try json(h.payload(#"{"message":{"fid":"f1"}}"#))) != nil)
    }

    @Test func storedNamesAreContentHashes() async throws {
        let (h, e) = try Harness.started()
        defer { h.stop(e) }
        _ = try await e.enrich(h.sample("clevertap.json"))  // progressive.jpg is under the display size: stored as is
        let original = Fixtures.bytes("progressive.jpg")
        let stored = try #require(listDirectory(h.mediaDirectory).first { Fixtures.bytes($0, in: h.mediaDirectory) == original })
        #expect(stored.hasSuffix(".jpg"))
    }

    @Test func notAPayloadIsAnError() async throws {
        let (h, e) = try Harness.started()
        defer { h.stop(e) }
        for bad in ["[1,2]", "\"text\"", "{", ""] {
            await #expect(throws: PayloadError.self) { try await e.enrich(Array(bad.utf8)) }
        }
    }

    @Test func reportHasStagesForEachAttachment() async throws {
        let (h, e) = try Harness.started()
        defer { h.stop(e) }
        let emission = try await e.enrich(h.sample("fcm.json"))
        let report = try #require(emission.report.json.objectValue)
        #expect(report["outcome"]?.stringValue == "enriched")
        #expect(report["elapsed_ms"]?.doubleValue != nil)
        let a = try #require(report["attachments"]?.arrayValue?.first?.objectValue)
        #expect(a["source"]?.stringValue == "http://127.0.0.1:\(h.origin.port)/photo.jpg")
        #expect(a["kind"]?.stringValue == "image")
        #expect(a["format"]?.stringValue == "jpeg")
        #expect(a["bytes"]?.doubleValue == Double(Fixtures.bytes("photo.jpg").count))
        let timings = try #require(a["timings"]?.objectValue)
        #expect(timings.keys == ["dns", "connect", "tls", "first_byte", "download", "inspect", "render", "transcode", "store", "started"])
        let started = try #require(timings["started"]?.objectValue)
        #expect((started["fetch"]?.doubleValue ?? -1) >= 0)
        #expect((started["render"]?.doubleValue ?? 0) >= (started["inspect"]?.doubleValue ?? 1))
        #expect((timings["render"]?.doubleValue ?? 0) > 0)
    }
}

@Suite struct MovieEnrichTests {
    @Test func aClipIsAttachedWithItsPosterFrame() async throws {
        let (h, e) = try Harness.started()
        defer { h.stop(e) }
        let emission = try await e.enrich(h.sample("airship-video.json"))
        #expect(emission.outcome == .enriched)
        let entry = try #require(try json(emission.bytes)["attachments"]?.arrayValue?.first?.objectValue)
        #expect(entry["type"]?.stringValue == "public.mpeg-4")
        #expect(entry["duration"]?.numberText == "3")
        #expect(entry["thumbnail-time"]?.numberText == "2")
        #expect(entry["thumbnail"]?.objectValue?["width"]?.numberText == "320")
        #expect(emission.report.attachments.first?.kind == .video)
    }

    @Test func aSoundIsAttachedWithoutAThumbnail() async throws {
        let (h, e) = try Harness.started()
        defer { h.stop(e) }
        let emission = try await e.enrich(h.sample("clevertap-audio.json"))
        #expect(emission.outcome == .enriched)
        let entry = try #require(try json(emission.bytes)["attachments"]?.arrayValue?.first?.objectValue)
        #expect(entry["type"]?.stringValue == "com.apple.m4a-audio")
        #expect(entry["thumbnail"] == nil)
    }

    @Test func refusedMoviesFallBack() async throws {
        try await Harness.expectOriginal({ $0.sample("fallback-playlist.json") }, reason: .unsupportedType)
        // Without conversion, a WebM is refused as iOS would refuse it.
        let (h, e) = try Harness.started { $0.media.render.transcode = nil }
        defer { h.stop(e) }
        let input = h.sample("webm.json")
        let emission = try await e.enrich(input)
        #expect(emission.bytes == input)
        #expect(emission.reason == .unsupportedType)
    }

    /// Movies and sounds iOS does not play arrive as ones it does, with the stage in the report.
    @Test(arguments: [
        ("webm.json", "public.mpeg-4", "webm", "transcode"), ("voice-note.json", "public.mpeg-4-audio", "ogg", "transcode"),
        ("mkv.json", "public.mpeg-4", "mkv", "remux"),
    ])
    func convertedMoviesAndSoundsAreAttached(_ name: String, _ type: String, _ from: String, _ method: String) async throws {
        let (h, e) = try Harness.started()
        defer { h.stop(e) }
        let emission = try await e.enrich(h.sample(name))
        #expect(emission.outcome == .enriched)
        let entry = try #require(try json(emission.bytes)["attachments"]?.arrayValue?.first?.objectValue)
        #expect(entry["type"]?.stringValue == type)
        #expect(entry["converted-from"]?.stringValue == from)
        let report = try #require(emission.report.attachments.first)
        #expect(report.conversion?.json.objectValue?["method"]?.stringValue == method)
        #expect(report.timings.spans.contains { $0.stage == "transcode" })
        let stored = try #require(entry["url"]?.stringValue)
        #expect(stored.hasPrefix("file://"))
        let bytes = try readFile(String(stored.dropFirst("file://".count)))
        let facts = try VideoPipeline().probe(bytes)
        #expect(facts.isSupported)
        #expect(facts.format == (type == "public.mpeg-4" ? .mp4 : .m4a))
    }
}

final class Records: Sendable {
    let lines = Mutex<[(message: String, metadata: [String: String])]>([])
}

/// Keeps what is logged, with the logger's metadata and the record's merged.
struct RecordingHandler: LogHandler {
    let records: Records
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }.mapValues { "\($0)" }
        records.lines.withLock { $0.append((event.message.description, merged)) }
    }
}

/// Warm-through: a download still running when its payload's deadline passes goes on, and the
/// next payload for the same media finds it cached instead of starting it again. Each test needs
/// its first payload to have started the download within its 600 ms: run with the *Deadline*
/// suites, one at a time after the others (on a loaded machine, with every suite at once, a
/// payload could spend its whole budget waiting for a thread).
@Suite(.serialized) struct WarmThroughDeadlineTests {
    @Test func theNextPayloadFindsWhatTheLastOneLeftRunning() async throws {
        let (h, e) = try Harness.started {
            $0.cache = MediaCache.Configuration(warmThrough: .seconds(20))
            $0.runtime.deadlinePolicy.default = .milliseconds(600)
        }
        defer { h.stop(e) }
        // The origin takes 2 s to answer: longer than a payload's deadline, not than the work limit.
        let input = h.payload(#"{"aps":{"alert":"x","mutable-content":1},"image-url":"ORIGIN/photo.jpg?delay=2000"}"#)
        let first = try await e.enrich(input)
        #expect(first.reason == .timeout)
        #expect(first.bytes == input)
        let cache = try #require(e.services.cache)
        #expect(await eventually(within: .seconds(15)) { cache.statistics.warmed == 1 })
        // A hit needs no 600 ms, but a busy machine may take longer: what is checked is where it came from.
        let second = try await e.enrich(input, budget: Fixtures.generousDeadline)
        #expect(second.outcome == .enriched)
        #expect(second.report.attachments.first?.cache == .hit)
        #expect(h.origin.statistics.requests == 1)
    }

    /// Without warm-through (one-shot commands) the work ends with its payload.
    @Test func withoutItTheWorkEndsWithThePayload() async throws {
        let (h, e) = try Harness.started {
            $0.cache = MediaCache.Configuration()
            $0.runtime.deadlinePolicy.default = .milliseconds(600)
        }
        defer { h.stop(e) }
        let input = h.payload(#"{"aps":{"alert":"x","mutable-content":1},"image-url":"ORIGIN/photo.jpg?delay=2000"}"#)
        #expect(try await e.enrich(input).reason == .timeout)
        // Given time, the next payload fetches again: nothing was kept. (It may first wait for the
        // abandoned computation to end, if that is still unwinding, then start its own.)
        let second = try await e.enrich(input, budget: Fixtures.generousDeadline)
        #expect(second.outcome == .enriched)
        #expect(second.report.attachments.first?.cache == .miss)
        #expect(e.services.cache?.statistics.misses == 2)  // started again: nothing was kept
        #expect(e.services.cache?.statistics.warmed == 0)
    }
}

/// A scope's caps hold for the copies made for the device as for the media fetched: conversion
/// (on by default) makes a movie over its scope's cap smaller, even one the device would play as
/// it came.
@Suite(.onTestThreads) struct ScopeCapTests {
    @Test(arguments: [Isolation.inProcess, .process])
    func aPlayableMovieOverItsScopesCapIsConvertedWithinIt(_ isolation: Isolation) async throws {
        let (h, e) = try Harness.started {
            $0.isolation = isolation
            $0.decoders.helpers = 1
        }
        defer { h.stop(e) }
        let input = h.payload(#"{"aps":{"alert":"x","mutable-content":1},"com.urbanairship.media_attachment":{"url":"ORIGIN/clip.mp4"}}"#)
        // clip.mp4 (79,053 bytes, H.264 and AAC) goes as it came under Apple's caps...
        let unscoped = try #require(try json(await e.enrich(input).bytes)["attachments"]?.arrayValue?.first?.objectValue)
        #expect(unscoped["bytes"]?.doubleValue == 79_053 && unscoped["converted-from"] == nil)
        // ...and is made smaller for a tenant whose movies are capped below that.
        let cap = 60_000
        let scope = EnrichmentScope(name: "acme", limits: MediaLimits(videoBytes: cap), cacheNamespace: "acme")
        let emission = try await e.enrich(input, scope: scope)
        #expect(emission.outcome == .enriched)
        let entry = try #require(try json(emission.bytes)["attachments"]?.arrayValue?.first?.objectValue)
        let bytes = try #require(entry["bytes"]?.doubleValue)
        #expect(bytes <= Double(cap))
        #expect(entry["type"]?.stringValue == "public.mpeg-4" && entry["converted-from"]?.stringValue == "mp4")
        let url = try #require(entry["url"]?.stringValue)
        #expect(try readFile(String(url.dropFirst("file://".count))).count == Int(bytes))
    }
}
