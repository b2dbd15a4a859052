import Attache
import AttacheEnrichment
import AttacheHTTPKit
import AttachePayload
import AttacheTimeline
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// `attache lab` as an application: the page and its assets (compiled into the binary), the API
/// it calls, and the media the runs made.
///
/// - `GET /api/setup`: the samples, the fault profiles, the stages a timeline draws, the bounds.
/// - `POST /api/check` `{"payload"}`: 204, or the 400 of invalid JSON with its line and column.
/// - `POST /api/run` `{"payload", "deadline_ms", "profile"}`: one run, as Server-Sent Events:
///   `start`, then `attachment` each time an attachment's report changes (its stages so far), then
///   `result`. Invalid JSON is a 400 naming its line and column before any event.
/// - `POST /api/sweep` `{"payload", "deadlines_ms": [..], "profiles": [..]}`: every pair run in
///   parallel (within the lab's bounds), each a `cell` event as it ends, then `done` with the CSV
///   and the SVG heat map.
/// With tokens configured, `/api/*` requires `Authorization: Bearer`; the page asks for it.
/// Other sites' pages are kept out by `LabGuard` (Host, Origin, Content-Type).
public func buildLabApplication(lab: Lab, logger: Logger = Logger(label: "attache.lab"),
                                onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }) -> some ApplicationProtocol {
    let router = Router(context: AttacheRequestContext.self)
    router.add(middleware: LabGuard(loopback: lab.configuration.isLoopback, port: lab.configuration.port))
    for asset in LabPage.assets {
        router.get(RouterPath(stringLiteral: asset.path)) { _, _ in
            Response(status: .ok, headers: [.contentType: asset.type, .cacheControl: "no-cache"],
                     body: .init(byteBuffer: ByteBuffer(string: asset.body)))
        }
    }
    MediaController(directory: lab.mediaDirectory).register(on: router)
    let api = router.group("api").add(middleware: BearerAuth(tokens: lab.configuration.tokens))
    let controller = LabController(lab: lab)
    api.get("setup") { _, _ in controller.setup() }
    api.post("check") { request, _ in await controller.answer { try await controller.check(request) } }
    api.post("run") { request, _ in await controller.answer { try await controller.run(request) } }
    api.post("sweep") { request, _ in await controller.answer { try await controller.sweep(request) } }
    return Application(
        router: router,
        configuration: .init(address: .hostname(lab.configuration.host, port: lab.configuration.port), serverName: "Attache lab"),
        onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? lab.configuration.port) },
        logger: logger
    )
}

struct LabController: Sendable {
    let lab: Lab

    /// The largest request: a 64 KiB payload, escaped inside a JSON string.
    static let maxRequestBytes = 512 * 1024

    func answer(_ body: () async throws -> Response) async -> Response {
        do {
            return try await body()
        } catch let error as LabError {
            var more = JSONObject()
            if let (line, column) = error.location {
                more["line"] = .int(line)
                more["column"] = .int(column)
            }
            return ErrorResponse.response(.init(code: error.status), error.message, more: more)
        } catch {
            return ErrorResponse.response(.badRequest, "\(error)")
        }
    }

    func setup() -> Response {
        let configuration = lab.configuration
        let setup = JSONObject([
            "samples": .array(lab.samples.map { .object(JSONObject(["name": .string($0.name), "payload": .string($0.text)])) }),
            "profiles": .array(FaultProfile.all.map {
                .object(JSONObject(["name": .string($0.name), "label": .string($0.label), "query": .string($0.query)]))
            }),
            "stages": LabEvents.stages,
            "origin": .string(lab.originURL),
            "budget_bytes": .int(lab.enrichment.runtime.configuration.maxPayloadBytes),
            "limits": .object(JSONObject([
                // The deadline the page starts at (`--deadline`) and the longest it may ask for.
                "deadline_ms": .int(Int(lab.enrichment.deadlinePolicy.default.milliseconds)),
                "max_deadline_ms": .int(Int(lab.maxBudget.milliseconds)),
                "max_sweep_cells": .int(configuration.maxSweepCells),
            ])),
        ])
        return Response(status: .ok, headers: [.contentType: "application/json"],
                        body: .init(byteBuffer: ByteBuffer(bytes: JSONWriter.bytes(.object(setup)))))
    }

    /// The request's JSON object.
    private func fields(_ request: Request) async throws -> JSONObject {
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: Self.maxRequestBytes)
        } catch {
            throw LabError("a request is at most \(Self.maxRequestBytes / 1024) KiB", status: 413)
        }
        guard let object = (try? JSONParser(maxBytes: Self.maxRequestBytes).parse(Array(buffer: buffer)))?.objectValue else {
            throw LabError("the request is not a JSON object")
        }
        return object
    }

    private func payloadText(_ fields: JSONObject) throws -> String {
        guard let text = fields["payload"]?.stringValue, !text.isEmpty else { throw LabError("paste a payload first") }
        return text
    }

    private func profile(_ name: String?) throws -> FaultProfile {
        guard let profile = FaultProfile.named(name ?? "none") else { throw LabError("no fault profile named \(name ?? "")") }
        return profile
    }

    private func milliseconds(_ value: JSONValue?) throws -> Int {
        guard let number = value?.doubleValue, number.isFinite, abs(number) < 1e9 else { throw LabError("a deadline is a number of milliseconds") }
        return Int(number.rounded())
    }

    /// 204 when the payload parses, else the 400 of invalid JSON with its line and column: what
    /// the page marks while the developer types.
    func check(_ request: Request) async throws -> Response {
        _ = try await lab.prepare(try payloadText(try await fields(request)), profile: FaultProfile.all[0])
        return Response(status: .noContent)
    }

    func run(_ request: Request) async throws -> Response {
        let fields = try await fields(request)
        let profile = try profile(fields["profile"]?.stringValue)
        let deadline = try lab.deadline(milliseconds: try milliseconds(fields["deadline_ms"] ?? .int(2000)))
        let bytes = try await lab.prepare(try payloadText(fields), profile: profile)
        let lab = self.lab
        return EventStream.response { events in
            events.send("start", LabEvents.start(deadline: deadline, payload: bytes, profile: profile))
            let emission = try await lab.run(bytes, budget: deadline) { index, report in
                events.send("attachment", LabEvents.attachment(index, report))
            }
            events.send("result", lab.result(emission, asRun: bytes))
        }
    }

    func sweep(_ request: Request) async throws -> Response {
        let fields = try await fields(request)
        let text = try payloadText(fields)
        guard let deadlineValues = fields["deadlines_ms"]?.arrayValue, !deadlineValues.isEmpty,
              let profileNames = fields["profiles"]?.arrayValue?.compactMap(\.stringValue), !profileNames.isEmpty else {
            throw LabError("a sweep needs deadlines_ms and profiles")
        }
        var deadlines: [Int] = []
        for value in deadlineValues {
            let ms = try milliseconds(value)
            _ = try lab.deadline(milliseconds: ms)
            if !deadlines.contains(ms) { deadlines.append(ms) }
        }
        var profiles: [FaultProfile] = []
        for name in profileNames where !profiles.contains(where: { $0.name == name }) { profiles.append(try profile(name)) }
        let cells = deadlines.count * profiles.count
        guard cells <= lab.configuration.maxSweepCells else {
            throw LabError("a sweep runs at most \(lab.configuration.maxSweepCells) cells; \(deadlines.count) × \(profiles.count) is \(cells)")
        }
        let slot = try lab.sweepSlot()
        var prepared: [(FaultProfile, [UInt8])] = []
        for profile in profiles { prepared.append((profile, try await lab.prepare(text, profile: profile))) }
        let lab = self.lab, columns = deadlines, rows = profiles.map(\.name)
        let jobs = prepared.flatMap { p in deadlines.map { (profile: p.0, bytes: p.1, deadline: $0) } }
        return EventStream.response { events in
            events.send("start", .object(JSONObject([
                "deadlines_ms": .array(columns.map(JSONValue.int)), "profiles": .array(rows.map(JSONValue.string)),
            ])))
            let grid = try await withThrowingTaskGroup(of: SweepGrid.Cell.self) { group in
                for job in jobs {
                    group.addTask {
                        let emission = try await lab.run(job.bytes, budget: .milliseconds(job.deadline))
                        let cell = SweepGrid.Cell(deadlineMs: job.deadline, profile: job.profile.name, report: emission.report)
                        var o = JSONObject([
                            "deadline_ms": .int(cell.deadlineMs), "profile": .string(cell.profile), "outcome": .string(cell.outcome.rawValue),
                            "reason": cell.reason.map { .string($0.description) } ?? .null, "elapsed_ms": .milliseconds(cell.elapsedMs),
                            "attached": .int(cell.attached), "attachment_count": .int(cell.attachments),
                        ])
                        o["attachments"] = .array(emission.report.attachments.enumerated().map { LabEvents.attachment($0.offset, $0.element) })
                        events.send("cell", .object(o))
                        return cell
                    }
                }
                var cells: [SweepGrid.Cell] = []
                for try await cell in group { cells.append(cell) }
                return SweepGrid(deadlinesMs: columns, profiles: rows, cells: cells)
            }
            events.send("done", .object(JSONObject(["csv": .string(grid.csv()), "svg": .string(grid.svg())])))
            withExtendedLifetime(slot) {}
        }
    }
}

/// A response of Server-Sent Events: `work` sends them as it goes, and they are written as they
/// come. A client that goes away cancels the work (the next write fails and ends the group).
enum EventStream {
    final class Sink: Sendable {
        let continuation: AsyncStream<ByteBuffer>.Continuation
        init(_ continuation: AsyncStream<ByteBuffer>.Continuation) { self.continuation = continuation }

        func send(_ event: String, _ data: JSONValue) {
            // JSONWriter escapes line breaks inside strings: the data is one line.
            continuation.yield(ByteBuffer(string: "event: \(event)\ndata: \(JSONWriter.string(data))\n\n"))
        }
    }

    static func response(_ work: @escaping @Sendable (Sink) async throws -> Void) -> Response {
        let headers: HTTPFields = [.contentType: "text/event-stream", .cacheControl: "no-store"]
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            let (stream, continuation) = AsyncStream.makeStream(of: ByteBuffer.self)
            let sink = Sink(continuation)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    do {
                        try await work(sink)
                    } catch let error as LabError {
                        sink.send("error", .object(JSONObject(["error": .string(error.message)])))
                    } catch {
                        sink.send("error", .object(JSONObject(["error": .string("\(error)")])))
                    }
                    continuation.finish()
                }
                for await event in stream { try await writer.write(event) }
                try await group.waitForAll()
            }
            try await writer.finish(nil)
        })
    }
}
