import ServiceContextModule
import Testing
import Instrumentation
import Tracing
@testable import AttacheTracing

extension SpanBuffer {
    /// Everything waiting, full batch or not, as the exporter takes it at a tick.
    func take() -> (batch: Batch, dropped: Int) {
        wake()
        return next()
    }
}

@Suite struct TraceContextTests {
    @Test func readsAndWritesATraceparent() throws {
        let text = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        let context = try #require(TraceContext(traceparent: text))
        #expect(context.traceID == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(context.spanIDText == "00f067aa0ba902b7")
        #expect(context.sampled)
        #expect(context.isRemote)
        #expect(context.traceparent == text)
        #expect(TraceContext(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")?.sampled == false)
        // A later version may carry more after the flags.
        #expect(TraceContext(traceparent: "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-comes-next") != nil)
    }

    @Test(arguments: [
        "", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7", "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
        "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
    ])
    func refusesWhatIsNotOne(_ text: String) {
        #expect(TraceContext(traceparent: text) == nil)
    }

    @Test func aSpanContinuesItsCallersTraceAndKeepsItsDecision() {
        let tracer = AttacheTracer(sampler: .parentBased(root: .alwaysOn), buffer: SpanBuffer(capacity: 8, batch: 8))
        var caller = ServiceContext.topLevel
        caller.traceContext = TraceContext(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")
        let span = tracer.startSpan("x", context: caller, ofKind: .internal, at: DefaultTracerClock.now, function: #function, file: #fileID, line: #line)
        #expect(span.context.traceContext?.traceID == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(span.context.traceContext?.spanID != 0x00f0_67aa_0ba9_02b7)
        #expect(!span.isRecording, "the caller did not sample the trace")
        var headers: [String: String] = [:]
        tracer.inject(span.context, into: &headers, using: DictionaryInjector())
        #expect(headers["traceparent"]?.hasPrefix("00-4bf92f3577b34da6a3ce929d0e0e4736-") == true)
        #expect(headers["traceparent"]?.hasSuffix("-00") == true)
    }

    @Test func aSpanStartedThroughTheTracingAPIInsideARequestGoesUnderIt() throws {
        let tracer = AttacheTracer(sampler: .parentBased(root: .alwaysOn), buffer: SpanBuffer(capacity: 8, batch: 8))
        let request = try #require(TraceContext(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))
        let span = TraceContext.$current.withValue(request) {
            tracer.startSpan("x", context: .topLevel, ofKind: .client, at: DefaultTracerClock.now, function: #function, file: #fileID, line: #line)
        }
        #expect(span.context.traceContext?.traceID == request.traceID)
        #expect(span.isRecording)
        let outside = tracer.startSpan("y", context: .topLevel, ofKind: .client, at: DefaultTracerClock.now, function: #function, file: #fileID,
                                       line: #line)
        #expect(outside.context.traceContext?.traceID != request.traceID, "outside a request a span starts a trace")
    }

    @Test func anEndedSampledSpanIsBufferedOnce() {
        let buffer = SpanBuffer(capacity: 8, batch: 8)
        let tracer = AttacheTracer(sampler: .alwaysOn, buffer: buffer)
        let span = tracer.startSpan("payload", context: .topLevel, ofKind: .server, at: DefaultTracerClock.now, function: #function, file: #fileID, line: #line)
        span.attributes["attache.outcome"] = "enriched"
        span.end()
        span.end()
        span.attributes["late"] = "ignored"
        let (batch, dropped) = buffer.take()
        let spans = WrittenSpan.all(batch)
        #expect(spans.count == 1)
        #expect(dropped == 0)
        #expect(spans.first?.name == "payload")
        #expect(spans.first?.attributes == [SpanField("attache.outcome", .string("enriched"))])
    }

    @Test func aRecordedSpanIsBufferedWholeUnderItsParent() throws {
        let buffer = SpanBuffer(capacity: 8, batch: 8)
        let tracer = AttacheTracer(sampler: .parentBased(root: .alwaysOn), buffer: buffer)
        let caller = TraceContext(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
        let payload = tracer.record("payload", kind: .internal, parent: caller, start: 10, end: 30,
                                    status: SpanStatus(code: .error, message: "late")) {
            $0.attribute("attache.outcome", "enriched")
            $0.attribute("attache.reason", nil as String?)
        }
        // An end before the start is the start.
        let stage = tracer.record("download", kind: .internal, parent: payload, start: 12, end: 11)
        #expect(payload.traceID == "4bf92f3577b34da6a3ce929d0e0e4736" && stage.traceID == payload.traceID)
        let spans = WrittenSpan.all(buffer.take().batch)
        try #require(spans.count == 2)
        #expect(spans.map(\.name) == ["payload", "download"])
        #expect(spans[0].trace == caller?.traceID && spans[0].spanID == payload.spanID)
        #expect(spans[0].parentSpanID == 0x00f0_67aa_0ba9_02b7 && spans[0].parentIsRemote == true)
        #expect(spans[0].attributes == [SpanField("attache.outcome", .string("enriched"))])
        #expect(spans[0].status == "late")
        #expect(spans[1].parentSpanID == payload.spanID && spans[1].parentIsRemote == false)
        #expect(spans[1].start == 12 && spans[1].end == 12)
        // Under a caller that did not sample the trace, nothing is kept, and children follow it.
        let unsampled = TraceContext(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")
        let skipped = tracer.record("payload", kind: .internal, parent: unsampled, start: 1, end: 2) { _ in
            Issue.record("the attributes of a span not sampled are not written")
        }
        tracer.record("download", kind: .internal, parent: skipped, start: 1, end: 2)
        #expect(!skipped.sampled)
        #expect(buffer.take().batch.count == 0)
    }

    /// A span larger than the stack space it is written in (1 KB) moves to the heap as it is
    /// written, and comes out whole: every attribute, the lengths before them wider than a byte.
    @Test func aSpanLargerThanItsScratchSpaceIsWrittenWhole() throws {
        let buffer = SpanBuffer(capacity: 8, batch: 8)
        let tracer = AttacheTracer(sampler: .parentBased(root: .alwaysOn), buffer: buffer)
        let long = String(repeating: "é", count: 700)  // 1,400 bytes: past the scratch alone
        let names = (0..<40).map { "attache.part.\($0)" }
        tracer.record("payload", kind: .internal, parent: nil, start: 1, end: 2) { span in
            for name in names { span.attribute(named: name, "value of \(name)") }
            span.attribute(named: "attache.long", long)
            span.attribute("attache.after", 7)
        }
        let spans = WrittenSpan.all(buffer.take().batch)
        try #require(spans.count == 1)
        #expect(spans[0].name == "payload")
        #expect(spans[0].attributes == names.map { SpanField($0, .string("value of \($0)")) }
                + [SpanField("attache.long", .string(long)), SpanField("attache.after", .int(7))])
    }

    @Test func aFullBufferDropsAndCounts() {
        let buffer = SpanBuffer(capacity: 2, batch: 2)
        let tracer = AttacheTracer(sampler: .alwaysOn, buffer: buffer)
        for _ in 0..<5 {
            tracer.startSpan("s", context: .topLevel, ofKind: .internal, at: DefaultTracerClock.now, function: #function, file: #fileID, line: #line).end()
        }
        let (batch, dropped) = buffer.take()
        #expect(batch.count == 2 && WrittenSpan.all(batch).count == 2)
        #expect(dropped == 3)
    }

    @Test func spansAreHandedOverABatchAtATime() {
        let buffer = SpanBuffer(capacity: 5, batch: 2)
        let tracer = AttacheTracer(sampler: .alwaysOn, buffer: buffer)
        for name in ["a", "b", "c", "d", "e", "f"] { tracer.record(name, kind: .internal, parent: nil, start: 1, end: 2) }
        let (first, dropped) = buffer.take()
        #expect(WrittenSpan.all(first).map(\.name) == ["a", "b"])
        #expect(dropped == 1, "f: five wait at most")
        #expect(WrittenSpan.all(buffer.take().batch).map(\.name) == ["c", "d"])
        #expect(WrittenSpan.all(buffer.take().batch).map(\.name) == ["e"])
        #expect(buffer.take().batch.count == 0)
        // Room again once taken.
        tracer.record("g", kind: .internal, parent: nil, start: 1, end: 2)
        #expect(WrittenSpan.all(buffer.take().batch).map(\.name) == ["g"])
    }

    /// As the specification's batch processor: a batch goes to the exporter when it is full, the
    /// one being filled only when a tick or a flush asks, and then once.
    @Test func theExporterTakesAFullBatchAtOnceAndTheRestWhenItsTimeComes() {
        let buffer = SpanBuffer(capacity: 8, batch: 2)
        let tracer = AttacheTracer(sampler: .alwaysOn, buffer: buffer)
        for name in ["a", "b", "c"] { tracer.record(name, kind: .internal, parent: nil, start: 1, end: 2) }
        #expect(WrittenSpan.all(buffer.next().batch).map(\.name) == ["a", "b"])
        #expect(buffer.next().batch.count == 0, "c waits for its batch to fill or for the delay")
        buffer.wake()
        #expect(WrittenSpan.all(buffer.next().batch).map(\.name) == ["c"])
        tracer.record("d", kind: .internal, parent: nil, start: 1, end: 2)
        #expect(buffer.next().batch.count == 0, "the tick was used")
        buffer.finish()
        #expect(WrittenSpan.all(buffer.next().batch).map(\.name) == ["d"], "at shutdown what is left goes")
    }

    /// Written into the room kept before the spans, or, with none, copied with them: the same bytes.
    @Test(arguments: [true, false])
    func aRequestHoldsABatchUnderOneResourceAndScope(roomKept: Bool) throws {
        let head = OTLPEncoding.Head(resource: [("service.name", "attache")], scope: ("attache", "1.0"))
        let buffer = SpanBuffer(capacity: 64, batch: 64, room: roomKept ? head.room : 0)
        let tracer = AttacheTracer(sampler: .alwaysOn, buffer: buffer)
        let names = (0..<40).map { "span \($0)" }
        for name in names { tracer.record(name, kind: .internal, parent: nil, start: 1, end: 2) { $0.attribute("k", 1) } }
        var body = buffer.take().batch.spans
        let storage = body.withVeryUnsafeBytes { $0.baseAddress }
        OTLPEncoding.request(&body, head: head)
        #expect(roomKept == (body.withVeryUnsafeBytes { $0.baseAddress } == storage), "made in place with the room, else copied")
        let request = ProtobufReader.fields(Array(body.readableBytesView)[...])
        try #require(request.count == 1 && request[0].number == 1)
        let resourceSpans = ProtobufReader.fields(try #require(request[0].bytes))
        #expect(resourceSpans.map(\.number) == [1, 2])
        let resource = ProtobufReader.fields(try #require(resourceSpans[0].bytes))
        #expect(resource.count == 1 && resource[0].number == 1, "one attribute")
        let scopeSpans = ProtobufReader.fields(try #require(resourceSpans[1].bytes))
        let scope = ProtobufReader.fields(try #require(scopeSpans.first?.bytes))
        #expect(scope.compactMap { $0.bytes.map { String(decoding: $0, as: UTF8.self) } } == ["attache", "1.0"])
        let spans = scopeSpans.dropFirst().compactMap { $0.number == 2 ? $0.bytes.map(WrittenSpan.init) : nil }
        #expect(spans.map(\.name) == names)
        #expect(spans.allSatisfy { $0.attributes == [SpanField("k", .int(1))] })
    }

    @Test func theConsoleReadsALinePerSpan() {
        let buffer = SpanBuffer(capacity: 8, batch: 8)
        let tracer = AttacheTracer(sampler: .alwaysOn, buffer: buffer)
        let payload = tracer.record("payload", kind: .internal, parent: nil, start: 0, end: 2_000_000) {
            $0.attribute("attache.outcome", "enriched")
            $0.attribute(named: "door", "relay")
            $0.attribute("n", 2)
        }
        tracer.record("download", kind: .internal, parent: payload, start: 0, end: 1_000_000)
        var caller = ServiceContext.topLevel
        caller.traceContext = payload
        let span = tracer.startSpan("request", context: caller, ofKind: .server, at: DefaultTracerClock.now, function: #function, file: #fileID, line: #line)
        span.attributes["ok"] = true
        span.attributes["ratio"] = 0.5
        span.attributes["sizes"] = [1, 2]
        span.end()
        let lines = ConsoleSpan.lines(buffer.take().batch.bytes).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 4 && lines[3].isEmpty)
        #expect(lines[0] == "span payload trace=\(payload.traceID) span=\(payload.spanIDText) duration_ms=2.0 attache.outcome=enriched door=relay n=2")
        #expect(lines[1].hasPrefix("span download trace=\(payload.traceID) ") && lines[1].contains(" parent=\(payload.spanIDText) duration_ms=1.0"))
        #expect(lines[2].hasPrefix("span request trace=\(payload.traceID) ") && lines[2].hasSuffix(" ok=true ratio=0.5 sizes=[1,2]"))
    }

    @Test func aRatioSamplesByTheTraceID() {
        #expect(Sampler.ratio(0.5).samples(traceLow: 0x0000_0000_0000_0001, parent: nil))
        #expect(!Sampler.ratio(0.5).samples(traceLow: 0x00FF_FFFF_FFFF_FFFF, parent: nil))
        #expect(!Sampler.ratio(0).samples(traceLow: 0, parent: nil))
        #expect(Sampler.ratio(1).samples(traceLow: 0x00FF_FFFF_FFFF_FFFF, parent: nil))
    }
}

@Suite struct TracingConfigurationTests {
    func configuration(_ variables: [String: String]) throws -> TracingConfiguration? {
        try TracingConfiguration(variable: { variables[$0] })
    }

    @Test func offUnlessAskedFor() throws {
        #expect(try configuration([:]) == nil)
        #expect(try configuration(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"]) == nil)
        #expect(try configuration(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"]) == nil)
    }

    @Test func theEndpointAndItsDefaults() throws {
        let c = try #require(try configuration(["OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector.example:4318/base/"]))
        #expect(c.destination.url == TracingConfiguration.Endpoint("https://collector.example:4318/base/v1/traces"))
        #expect(c.destination.url?.secure == true)
        #expect(c.serviceName == "attache")
        #expect(c.sampler == .parentBased(root: .alwaysOn))
        #expect(c.scheduleDelay == .seconds(5))
        #expect(c.timeout == .seconds(10))
        #expect(c.maxQueueSize == 16384)
        #expect(c.maxExportBatchSize == 8192)
        let traces = try #require(try configuration(["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://[::1]:9/t?x=1"]))
        #expect(traces.destination.url?.host == "[::1]")
        #expect(traces.destination.url?.port == 9)
        #expect(traces.destination.url?.path == "/t?x=1")
        let local = try #require(try configuration(["OTEL_TRACES_EXPORTER": "otlp"]))
        #expect(local.destination.url == TracingConfiguration.Endpoint("http://localhost:4318/v1/traces"))
        #expect(try configuration(["OTEL_TRACES_EXPORTER": "console"])?.destination.url == nil)
    }

    @Test func headersResourceAndSampler() throws {
        let c = try #require(try configuration([
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_HEADERS": "api-key=a%20b, x=1",
            "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=prod,service.name=push", "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
            "OTEL_TRACES_SAMPLER_ARG": "0.25", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "2500",
        ]))
        #expect(c.destination.headers.map { "\($0.0)=\($0.1)" } == ["api-key=a b", "x=1"])
        #expect(c.serviceName == "push")
        #expect(c.resourceAttributes.first.map { "\($0.0)=\($0.1)" } == "service.name=push")
        #expect(c.resourceAttributes.contains { $0.0 == "deployment.environment" && $0.1 == "prod" })
        #expect(c.sampler == .parentBased(root: .ratio(0.25)))
        #expect(c.timeout == .milliseconds(2500))
    }

    @Test(arguments: [
        ["OTEL_TRACES_EXPORTER": "zipkin"], ["OTEL_EXPORTER_OTLP_ENDPOINT": "c:4318"],
        ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"],
        ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_SAMPLER": "sometimes"],
        ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"],
        ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_BSP_SCHEDULE_DELAY": "soon"],
        ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_HEADERS": "novalue"],
    ])
    func refusesWhatItCannotFollow(_ variables: [String: String]) {
        #expect(throws: TracingConfiguration.Invalid.self) { try configuration(variables) }
    }
}

@Suite struct ProtobufWriterTests {
    @Test func writesTheWireFormat() {
        var w = ProtobufWriter()
        w.varint(1, 300)
        w.string(2, "hi")
        w.message(3) { $0.varint(1, 1) }
        w.fixed64(4, 1)
        w.identifier(5, 0x0102_0304_0506_0708)
        #expect(w.bytes == [0x08, 0xAC, 0x02, 0x12, 0x02, 0x68, 0x69, 0x1A, 0x02, 0x08, 0x01, 0x21, 1, 0, 0, 0, 0, 0, 0, 0,
                            0x2A, 0x08, 1, 2, 3, 4, 5, 6, 7, 8])
        // A nested message of 200 bytes: its length takes two bytes in front of it.
        var long = ProtobufWriter()
        long.message(1) { $0.string(1, String(repeating: "a", count: 197)) }
        #expect(Array(long.bytes.prefix(3)) == [0x0A, 0xC8, 0x01])
        #expect(long.bytes.count == 3 + 200)
        // Nested: each length goes in front of its own message, the inner moved up first.
        var nested = ProtobufWriter()
        nested.message(1) { $0.message(2) { $0.string(1, String(repeating: "b", count: 197)) } }
        #expect(Array(nested.bytes.prefix(6)) == [0x0A, 0xCB, 0x01, 0x12, 0xC8, 0x01])
        #expect(nested.bytes.count == 3 + 3 + 200)
        #expect(nested.bytes.suffix(197).allSatisfy { $0 == 0x62 })
    }

    /// An attribute written at once is what nested messages write: a KeyValue (key 1, AnyValue 2:
    /// string 1, bool 2, int 3, double 4, array 5 of values 1).
    @Test(arguments: [
        SpanField("url.full", .string("https://cdn.example.com/a.jpg")),
        SpanField(String(repeating: "k", count: 130), .string(String(repeating: "é", count: 200))),
        SpanField("n", .int(-1)), SpanField("zero", .int(0)), SpanField("big", .int(300)),
        SpanField("ok", .bool(true)), SpanField("ratio", .double(0.25)),
        SpanField("list", .array([.string("a"), .int(2)])),
    ])
    func writesAnAttributeAsNestedMessagesWould(_ field: SpanField) {
        var fast = ProtobufWriter()
        fast.keyValue(9, field)
        func any(_ value: SpanField.Value, _ w: inout ProtobufWriter) {
            switch value {
            case .string(let s): w.string(1, s)
            case .bool(let b): w.varint(2, b ? 1 : 0)
            case .int(let i): w.varint(3, UInt64(bitPattern: i))
            case .double(let d): w.fixed64(4, d.bitPattern)
            case .array(let items): w.message(5) { a in for item in items { a.message(1) { any(item, &$0) } } }
            }
        }
        var nested = ProtobufWriter()
        nested.message(9) { kv in
            kv.string(1, field.key)
            kv.message(2) { any(field.value, &$0) }
        }
        #expect(fast.bytes == nested.bytes)
    }
}

/// A span read back from the bytes `SpanBuffer` holds (each a `ScopeSpans.spans` field): the
/// fields these tests check, with string, integer and boolean attributes.
private struct WrittenSpan {
    var trace = "", spanID: UInt64 = 0, parentSpanID: UInt64?, parentIsRemote: Bool?
    var name = "", start: UInt64 = 0, end: UInt64 = 0
    var attributes: [SpanField] = []
    var status: String?

    static func all(_ batch: SpanBuffer.Batch) -> [WrittenSpan] {
        ProtobufReader.fields(batch.bytes[...]).compactMap { $0.number == 2 ? $0.bytes.map(WrittenSpan.init) : nil }
    }

    init(_ bytes: ArraySlice<UInt8>) {
        for field in ProtobufReader.fields(bytes) {
            switch (field.number, field.bytes) {
            case (1, let id?): trace = TraceContext.hex(Self.number(id.prefix(8))) + TraceContext.hex(Self.number(id.suffix(8)))
            case (2, let id?): spanID = Self.number(id)
            case (4, let id?): parentSpanID = Self.number(id)
            case (5, let text?): name = String(decoding: text, as: UTF8.self)
            case (7, nil): start = field.value
            case (8, nil): end = field.value
            case (9, let pair?):
                let parts = ProtobufReader.fields(pair)
                let key = parts.first { $0.number == 1 }?.bytes.map { String(decoding: $0, as: UTF8.self) } ?? ""
                guard let any = parts.first(where: { $0.number == 2 })?.bytes, let value = ProtobufReader.fields(any).first else { continue }
                switch value.number {
                case 1: attributes.append(SpanField(key, .string(String(decoding: value.bytes ?? [], as: UTF8.self))))
                case 2: attributes.append(SpanField(key, .bool(value.value != 0)))
                case 3: attributes.append(SpanField(key, .int(Int64(bitPattern: value.value))))
                default: continue
                }
            case (15, let st?):
                status = ProtobufReader.fields(st).first { $0.number == 2 }?.bytes.map { String(decoding: $0, as: UTF8.self) }
            case (16, nil): parentIsRemote = field.value & 0x200 != 0
            default: continue
            }
        }
    }

    /// Bytes, most significant first.
    static func number(_ bytes: ArraySlice<UInt8>) -> UInt64 { bytes.reduce(0) { $0 << 8 | UInt64($1) } }
}

private struct DictionaryInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) { carrier[key] = value }
}
