import ServiceContextModule
import Testing
import Instrumentation
import Tracing
@testable import AttacheTracing

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

    @Test func anEndedSampledSpanIsBufferedOnce() {
        let buffer = SpanBuffer(capacity: 8, batch: 8)
        let tracer = AttacheTracer(sampler: .alwaysOn, buffer: buffer)
        let span = tracer.startSpan("payload", context: .topLevel, ofKind: .server, at: DefaultTracerClock.now, function: #function, file: #fileID, line: #line)
        span.attributes["attache.outcome"] = "enriched"
        span.end()
        span.end()
        span.attributes["late"] = "ignored"
        let (spans, dropped) = buffer.take()
        #expect(spans.count == 1)
        #expect(dropped == 0)
        #expect(spans.first?.name == "payload")
        #expect(spans.first?.attributes == [SpanField("attache.outcome", .string("enriched"))])
    }

    @Test func aRecordedSpanIsBufferedWholeUnderItsParent() {
        let buffer = SpanBuffer(capacity: 8, batch: 8)
        let tracer = AttacheTracer(sampler: .parentBased(root: .alwaysOn), buffer: buffer)
        let caller = TraceContext(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
        let payload = tracer.record("payload", kind: .internal, parent: caller, start: 10, end: 30,
                                    attributes: [SpanField("attache.outcome", .string("enriched"))],
                                    status: SpanStatus(code: .error, message: "late"))
        // An end before the start is the start.
        let stage = tracer.record("download", kind: .internal, parent: payload, start: 12, end: 11)
        #expect(payload.traceID == "4bf92f3577b34da6a3ce929d0e0e4736" && stage.traceID == payload.traceID)
        let (spans, _) = buffer.take()
        #expect(spans.map(\.name) == ["payload", "download"])
        #expect(spans[0].parentSpanID == 0x00f0_67aa_0ba9_02b7 && spans[0].parentIsRemote)
        #expect(spans[0].attributes == [SpanField("attache.outcome", .string("enriched"))])
        #expect(spans[0].status?.message == "late")
        #expect(spans[1].parentSpanID == payload.spanID && !spans[1].parentIsRemote)
        #expect(spans[1].start == 12 && spans[1].end == 12)
        // Under a caller that did not sample the trace, nothing is kept, and children follow it.
        let unsampled = TraceContext(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")
        let skipped = tracer.record("payload", kind: .internal, parent: unsampled, start: 1, end: 2)
        tracer.record("download", kind: .internal, parent: skipped, start: 1, end: 2)
        #expect(!skipped.sampled)
        #expect(buffer.take().spans.isEmpty)
    }

    @Test func aFullBufferDropsAndCounts() {
        let buffer = SpanBuffer(capacity: 2, batch: 2)
        let tracer = AttacheTracer(sampler: .alwaysOn, buffer: buffer)
        for _ in 0..<5 {
            tracer.startSpan("s", context: .topLevel, ofKind: .internal, at: DefaultTracerClock.now, function: #function, file: #fileID, line: #line).end()
        }
        let (spans, dropped) = buffer.take()
        #expect(spans.count == 2)
        #expect(dropped == 3)
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
        #expect(c.maxQueueSize == 8192)
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

private struct DictionaryInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) { carrier[key] = value }
}
