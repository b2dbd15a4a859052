import Attache
import AttacheEnrichment
import AttachePayload
import AttacheTimeline

/// What the lab tells its page, as JSON: the stages of an attachment as they are measured, and a
/// run's whole result. The spans are `StageTimings.spans`, the ones the timeline's SVG is drawn
/// from, so the page and `attache timeline --svg` draw the same picture.
enum LabEvents {
    static func spans(_ timings: StageTimings) -> JSONValue {
        .array(timings.spans.map { span in
            .object(JSONObject([
                "stage": .string(span.stage), "start": .milliseconds(span.start), "length": .milliseconds(span.length),
            ]))
        })
    }

    /// One attachment's report, with its spans.
    static func attachment(_ index: Int, _ report: AttachmentReport) -> JSONValue {
        guard case .object(var o) = report.json else { return .null }
        o["index"] = .int(index)
        o["spans"] = spans(report.timings)
        return .object(o)
    }

    /// The stages a timeline draws, in order, with their colours.
    static var stages: JSONValue {
        .array(TimelineRenderer.stages.map { .object(JSONObject(["name": .string($0.name), "color": .string($0.color)])) })
    }

    static func start(deadline: Duration, payload: [UInt8], profile: FaultProfile) -> JSONValue {
        .object(JSONObject([
            "deadline_ms": .milliseconds(deadline.milliseconds), "payload": .string(String(decoding: payload, as: UTF8.self)),
            "profile": .string(profile.name),
        ]))
    }
}

extension Lab {
    /// A run's result: outcome, the payload as run and as sent with what changed between them,
    /// its size against the budget, the images made, the words a device shows, and the timeline.
    func result(_ emission: Emission, asRun: [UInt8]) -> JSONValue {
        let report = emission.report
        let parser = enrichment.runtime.configuration.parser
        let before = (try? parser.parse(asRun)) ?? .null
        let after = (try? parser.parse(emission.bytes)) ?? .null
        var o = JSONObject()
        o["outcome"] = .string(report.outcome.rawValue)
        o["reason"] = report.reason.map { .string($0.description) } ?? .null
        o["elapsed_ms"] = .milliseconds(report.elapsedMs)
        o["deadline_ms"] = .milliseconds(report.deadlineMs)
        o["payload_in"] = .string(String(decoding: asRun, as: UTF8.self))
        o["payload_out"] = .string(String(decoding: emission.bytes, as: UTF8.self))
        o["unchanged"] = .bool(emission.bytes == asRun)
        o["payload_bytes"] = .int(emission.bytes.count)
        o["budget_bytes"] = .int(enrichment.runtime.configuration.maxPayloadBytes)
        o["diff"] = PayloadDiff(before: before, after: after).json
        o["attachments"] = .array(report.attachments.enumerated().map { LabEvents.attachment($0.offset, $0.element) })
        o["images"] = .array(images(in: after, report: report))
        o["text"] = after.objectValue.map { NotificationText($0).json } ?? .null
        o["svg"] = .string(TimelineRenderer(report: report).svg())
        return .object(o)
    }

    /// Every rendition the run stored: each attachment's main file and thumbnail (from the
    /// entries written into the payload) and its Android copy (from the report).
    private func images(in payload: JSONValue, report: EnrichReport) -> [JSONValue] {
        var entries: [AttachmentEntry] = []
        collectEntries(payload, key: enrichment.runtime.configuration.attachmentsKey, into: &entries)
        var out: [JSONValue] = []
        func add(_ id: String, _ role: String, _ url: String, _ type: String?, _ width: Int?, _ height: Int?, clip: JSONValue? = nil) {
            var o = JSONObject()
            o["attachment"] = .string(id)
            o["role"] = .string(role)
            o["url"] = .string(url)
            o["type"] = type.map(JSONValue.string) ?? .null
            o["format"] = .string(Lab.fileExtension(of: url))
            o["width"] = width.map(JSONValue.int) ?? .null
            o["height"] = height.map(JSONValue.int) ?? .null
            o["bytes"] = storedBytes(url).map(JSONValue.int) ?? .null
            if let clip { o["clip"] = clip }
            out.append(.object(o))
        }
        for entry in entries {
            let clip = entry.options.clippingRect.map { r in
                JSONValue.object(JSONObject(["x": .double(r.x), "y": .double(r.y), "width": .double(r.width), "height": .double(r.height)]))
            }
            add(entry.id, "attachment", entry.url, entry.type, entry.width, entry.height, clip: clip)
            if let t = entry.thumbnail { add(entry.id, "thumbnail", t.url, nil, t.width, t.height) }
        }
        for attachment in report.attachments {
            if let android = attachment.androidURL { add(attachment.id, "android", android, nil, nil, nil) }
        }
        return out
    }

    /// The entries under the attachments key, wherever in the payload they are (an FCM send
    /// request carries them in its APNs payload).
    private func collectEntries(_ value: JSONValue, key: String, into entries: inout [AttachmentEntry]) {
        switch value {
        case .object(let object):
            for member in object.members {
                if member.key == key, let items = member.value.arrayValue {
                    for item in items {
                        guard let o = item.objectValue, var entry = AttachmentEntry(json: o) else { continue }
                        if let r = o["thumbnail-clipping-rect"]?.objectValue, let x = r["x"]?.doubleValue, let y = r["y"]?.doubleValue,
                           let w = r["width"]?.doubleValue, let h = r["height"]?.doubleValue {
                            entry.options.clippingRect = .init(x: x, y: y, width: w, height: h)
                        }
                        entries.append(entry)
                    }
                } else {
                    collectEntries(member.value, key: key, into: &entries)
                }
            }
        case .array(let items):
            for item in items { collectEntries(item, key: key, into: &entries) }
        default:
            break
        }
    }
}
