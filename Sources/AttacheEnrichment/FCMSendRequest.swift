import Attache
import AttachePayload
import Logging

/// An FCM HTTP v1 send request — `{"message": {"token"|"fid"|"topic"|"condition", "notification": {"image"},
/// "apns": {"payload", "fcm_options": {"image"}}, "android": {"notification": {"image"}}}}` — what
/// a pipeline that sends to iOS and Android through FCM holds just before sending.
///
/// Its APNs part is enriched as the payload FCM will deliver: `apns.payload` with
/// `fcm_options.image` in it (FCM puts `apns.fcm_options.image`, else `notification.image`, there),
/// under the `mutable-content` gate, in the APNs budget less what FCM adds on delivery. Then
/// `apns.fcm_options.image` and `notification.image` name the validated iOS copy.
///
/// Its Android image (`android.notification.image`, else `notification.image`) is replaced by a
/// validated Android copy whatever the gate says: Android has no extension to ask, its device
/// downloads whatever URL it is given. The copy comes from the iOS image's download when both name
/// the same URL and the APNs part is enriched, else from a download of its own under the same
/// budget. URLs change only with a public base URL (a `file://` URL means nothing to FCM). Every
/// other field of the envelope is written back as it came (order, number spelling); what is not
/// changed is the original request, byte for byte.
struct FCMSendRequest {
    /// What FCM adds to the APNs payload on delivery, kept free in the budget: `gcm.message_id`
    /// (about 36 bytes with its key), `google.c.a.e` (19), `google.c.sender.id` (about 35),
    /// `google.c.fid` (about 40), and for console campaigns `google.c.a.c_id`, `c_l`, `ts`, `udt`
    /// (about 110): 240 bytes, rounded up. Measured from delivered payloads: FCM's reference does
    /// not list these keys or their sizes.
    static let deliveryReserve = 256

    let root: JSONObject
    let message: JSONObject
    /// The APNs payload as FCM delivers it (with `fcm_options.image` when the request names one).
    let apnsPayload: JSONObject
    /// `fcm_options` was added to `apnsPayload` by us (taken back out afterwards).
    let addedFCMOptions: Bool
    /// `aps.alert` was added to `apnsPayload` by us, as FCM adds it on delivery (taken back out).
    let addedAlert: Bool
    /// The image FCM shows on iOS: `apns.fcm_options.image`, else `notification.image`.
    let iosImage: String?
    /// The image Android is given: `android.notification.image`, else `notification.image`.
    let androidImage: String?

    /// The keys that name a message's target in FCM v1's `Message`: a registration token, a
    /// Firebase installation ID (what firebase-admin 7 sends in place of the deprecated token),
    /// a topic or a condition.
    static let targets = ["token", "fid", "topic", "condition"]

    /// Recognises a send request: a top-level object whose only keys are `message` (and
    /// `validate_only`), with one of `targets` in it. Nil for anything else.
    init?(_ root: JSONObject) {
        guard root.firstRepeatedKey() == nil, root.members.allSatisfy({ $0.key == "message" || $0.key == "validate_only" }),
              let message = root["message"]?.objectValue,
              Self.targets.contains(where: { message[$0] != nil }) else { return nil }
        self.root = root
        self.message = message
        let apns = message["apns"]?.objectValue
        var payload = apns?["payload"]?.objectValue ?? JSONObject()
        let image = apns?["fcm_options"]?.objectValue?["image"]?.stringValue ?? Self.notificationImage(message)
        iosImage = image
        androidImage = JSONValue.object(message)[path: [.key("android"), .key("notification"), .key("image")]]?.stringValue
            ?? Self.notificationImage(message)
        addedFCMOptions = image != nil && payload["fcm_options"] == nil
        if addedFCMOptions, let image { payload["fcm_options"] = .object(JSONObject(["image": .string(image)])) }
        // FCM builds `aps.alert` from `message.notification` on delivery when the APNs payload
        // has none (Google's own image example sends `aps` with `mutable-content` alone): the
        // payload judged by the gate and fitted to the budget is the one the device will get.
        if var aps = payload["aps"]?.objectValue, aps["alert"] == nil, let alert = Self.deliveredAlert(message) {
            aps["alert"] = .object(alert)
            payload["aps"] = .object(aps)
            addedAlert = true
        } else {
            addedAlert = false
        }
        apnsPayload = payload
    }

    /// Whether `bytes` could be a send request, from its first key alone (`message` or
    /// `validate_only`, its only keys): every payload passes through here, and an APNs payload
    /// must not be parsed twice to find it is not one.
    static func mightBe(_ bytes: [UInt8]) -> Bool {
        func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D }
        guard let open = bytes.firstIndex(where: { !isSpace($0) }), bytes[open] == UInt8(ascii: "{"),
              let key = bytes[(open + 1)...].firstIndex(where: { !isSpace($0) }) else { return false }
        let rest = bytes[key...]
        return rest.starts(with: #""message""#.utf8) || rest.starts(with: #""validate_only""#.utf8)
    }

    /// The alert FCM delivers for `message.notification`: its title and body (nil without either).
    private static func deliveredAlert(_ message: JSONObject) -> JSONObject? {
        guard let notification = message["notification"]?.objectValue else { return nil }
        var alert = JSONObject()
        for key in ["title", "body"] {
            if let text = notification[key]?.stringValue { alert[key] = .string(text) }
        }
        return alert.members.isEmpty ? nil : alert
    }

    private static func notificationImage(_ message: JSONObject) -> String? {
        message["notification"]?.objectValue?["image"]?.stringValue
    }

    /// The request around an enriched APNs payload (nil: the APNs part as it came), the media URLs
    /// pointed at the copies when `rewrite` (a public base URL is set).
    func request(around enriched: JSONObject?, androidURL: String?, rewrite: Bool) -> [UInt8] {
        var value = JSONValue.object(root)
        if var payload = enriched {
            let iosImage = payload["fcm_options"]?.objectValue?["image"]?.stringValue
            if addedFCMOptions { payload["fcm_options"] = nil }
            if addedAlert, case .object(var aps)? = payload["aps"] {
                aps["alert"] = nil
                payload["aps"] = .object(aps)
            }
            value.replace(at: [.key("message"), .key("apns"), .key("payload")][...], with: .object(payload))
            if rewrite, let iosImage {
                value.replace(at: [.key("message"), .key("apns"), .key("fcm_options"), .key("image")][...], with: .string(iosImage))
                value.replace(at: [.key("message"), .key("notification"), .key("image")][...], with: .string(iosImage))
            }
        }
        if rewrite, let androidURL, case .object(var message)? = value[path: [.key("message")]] {
            var android = message["android"]?.objectValue ?? JSONObject()
            var notification = android["notification"]?.objectValue ?? JSONObject()
            notification["image"] = .string(androidURL)
            android["notification"] = .object(notification)
            message["android"] = .object(android)
            value.replace(at: [.key("message")][...], with: .object(message))
        }
        return JSONWriter.bytes(value)
    }
}

extension Enrichment {
    /// An FCM send request through the runtime: its APNs part enriched and its Android image
    /// copied, each under the budget, the request rebuilt around them; nil when `bytes` is not one.
    func enrichFCMRequest(_ bytes: [UInt8], identifier: String, runtime: ExtensionRuntime,
                          logger: Logger, observer: ReportObserver?, scope: EnrichmentScope) async throws(PayloadError) -> Emission? {
        guard FCMSendRequest.mightBe(bytes), let root = try? Payload(bytes: bytes).root, let request = FCMSendRequest(root) else {
            return nil
        }
        var runtime = runtime
        runtime.configuration.maxPayloadBytes = min(runtime.configuration.maxPayloadBytes, PayloadBudget.apns - FCMSendRequest.deliveryReserve)
        let inner = JSONWriter.bytes(.object(request.apnsPayload))
        let services = self.services
        // Only a copy a device can be sent to is worth making apart: without a public base URL
        // nothing of the Android part would change.
        let androidImage = services.configuration.androidCopies ? request.androidImage : nil
        let gated = (try? Payload(bytes: inner).wantsServiceExtension) ?? false
        let together = androidImage != nil && androidImage == request.iosImage && gated
        let apart = androidImage != nil && !together && services.rewriteSourceURLs
        async let androidRun: Emission? = apart ? enrichAndroidImage(androidImage!, identifier: identifier, runtime: runtime,
                                                                      logger: logger, scope: scope) : nil
        let apns = try await runtime.process(inner, identifier: identifier, logger: logger) {
            services.makeExtension(androidCopy: together, observer: observer, scope: scope)
        }
        // An Android image that is not a URL at all was not attempted: the request goes on as if
        // it had none.
        let android = await androidRun.flatMap { $0.report.attachments.isEmpty ? nil : $0 }
        let apnsDone = apns.outcome == .enriched || apns.outcome == .partial
        let androidURL = together ? apns.report.attachments.lazy.compactMap(\.androidURL).first
                                  : android?.report.attachments.first?.androidURL

        var out = apns
        if let android {
            out.report.attachments += android.report.attachments
            out.report.elapsedMs = max(out.report.elapsedMs, android.report.elapsedMs)
            let failure = android.report.attachments.first?.reason ?? .unsupportedType
            switch (apnsDone, androidURL != nil) {
            case (true, true): break
            case (true, false): (out.report.outcome, out.report.reason) = (.partial, apns.reason ?? failure)
            case (false, true): (out.report.outcome, out.report.reason) = apns.outcome == .passthrough ? (.enriched, nil) : (.partial, apns.reason)
            case (false, false): (out.report.outcome, out.report.reason) = (.fallback, apns.outcome == .passthrough ? failure : apns.reason)
            }
        }
        guard out.report.outcome == .enriched || out.report.outcome == .partial else {
            out.bytes = bytes
            out.report.payloadBytes = bytes.count
            return out
        }
        let enriched = apnsDone ? (try? Payload(bytes: apns.bytes).root) : nil
        out.bytes = request.request(around: enriched, androidURL: androidURL, rewrite: services.rewriteSourceURLs)
        out.report.payloadBytes = out.bytes.count
        return out
    }

    /// The Android copy of `url` alone, as an attachment of a payload made for it (so that it is
    /// fetched, checked, cached and stored as every attachment is, under the same budget).
    private func enrichAndroidImage(_ url: String, identifier: String, runtime: ExtensionRuntime,
                                    logger: Logger, scope: EnrichmentScope) async -> Emission? {
        let payload: JSONValue = .object(JSONObject([
            "aps": .object(JSONObject(["alert": .string("android"), "mutable-content": .number("1")])),
            "fcm_options": .object(JSONObject(["image": .string(url)])),
        ]))
        let services = self.services
        guard var emission = try? await runtime.process(JSONWriter.bytes(payload), identifier: identifier, logger: logger, makeExtension: {
            services.makeExtension(androidCopy: true, scope: scope)
        }) else { return nil }
        for i in emission.report.attachments.indices { emission.report.attachments[i].id = "android" }
        return emission
    }
}
