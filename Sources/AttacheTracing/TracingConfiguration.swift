import Logging

/// Traces as the OpenTelemetry specification's standard variables configure them — the subset a
/// process exporting spans over OTLP/HTTP (protobuf) reads:
///
/// - on: `OTEL_EXPORTER_OTLP_ENDPOINT` (spans to its `/v1/traces`) or
///   `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (as it is) set, or `OTEL_TRACES_EXPORTER` `otlp` (to
///   `http://localhost:4318`) or `console` (a line per span on standard output); off with
///   `OTEL_TRACES_EXPORTER=none` or `OTEL_SDK_DISABLED=true`;
/// - `OTEL_EXPORTER_OTLP_[TRACES_]HEADERS` (`name=value,…`, values percent-decoded),
///   `…_TIMEOUT` (ms, 10000), `…_CERTIFICATE` (a CA file for `https`), `…_PROTOCOL` (only
///   `http/protobuf`);
/// - `OTEL_SERVICE_NAME` (`attache`), `OTEL_RESOURCE_ATTRIBUTES` (`key=value,…`);
/// - `OTEL_TRACES_SAMPLER` (`parentbased_always_on`; also `always_on`, `always_off`,
///   `traceidratio`, `parentbased_always_off`, `parentbased_traceidratio`) and
///   `OTEL_TRACES_SAMPLER_ARG` (the ratio, 1.0);
/// - `OTEL_BSP_SCHEDULE_DELAY` (ms, 5000), `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` (8192: a relay
///   enriching ten thousand payloads a second, two spans each, fills the specification's 512 in
///   a fortieth of a second) and `OTEL_BSP_MAX_QUEUE_SIZE` (16384, two batches: spans go on
///   being kept while a batch is on its way to a collector that answers slowly).
public struct TracingConfiguration: Sendable {
    /// Where spans go.
    public struct Destination: Sendable {
        /// Nil: the console.
        public var url: Endpoint?
        public var headers: [(String, String)]
        public var caFile: String?
    }

    /// An `http` or `https` URL, taken apart.
    public struct Endpoint: Sendable, Equatable {
        public var secure: Bool
        /// A name, an IPv4 address, or an IPv6 one in brackets.
        public var host: String
        public var port: Int
        /// With its query.
        public var path: String

        public init?(_ text: String) {
            let lower = text.lowercased()
            guard let scheme = ["http://", "https://"].first(where: { lower.hasPrefix($0) }) else { return nil }
            secure = scheme == "https://"
            let rest = text.dropFirst(scheme.count)
            let authority = rest.prefix { $0 != "/" && $0 != "?" }
            path = rest.dropFirst(authority.count).isEmpty ? "/" : String(rest.dropFirst(authority.count))
            if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
                host = String(authority[...close])
                let after = authority[authority.index(after: close)...]
                guard after.isEmpty || after.hasPrefix(":") else { return nil }
                guard let p = after.isEmpty ? (secure ? 443 : 80) : Int(after.dropFirst()) else { return nil }
                port = p
            } else {
                let parts = authority.split(separator: ":", omittingEmptySubsequences: false)
                guard (1...2).contains(parts.count), !parts[0].isEmpty else { return nil }
                host = String(parts[0])
                guard let p = parts.count == 2 ? Int(parts[1]) : (secure ? 443 : 80) else { return nil }
                port = p
            }
            guard (1...65535).contains(port) else { return nil }
        }
    }

    /// Why the variables cannot be followed.
    public struct Invalid: Error, CustomStringConvertible {
        public let description: String
    }

    public var destination: Destination
    public var sampler: Sampler
    public var serviceName: String
    public var resourceAttributes: [(String, String)]
    public var scheduleDelay: Duration
    public var timeout: Duration
    public var maxQueueSize: Int
    public var maxExportBatchSize: Int

    static let version = "1"

    /// Nil when the variables ask for no traces. `variable` gives one variable's value.
    public init?(variable: (String) -> String?) throws {
        func value(_ name: String) -> String? { variable(name).flatMap { $0.isEmpty ? nil : $0 } }
        func traces(_ name: String) -> String? { value("OTEL_EXPORTER_OTLP_TRACES_" + name) ?? value("OTEL_EXPORTER_OTLP_" + name) }
        func milliseconds(_ name: String, _ fallback: Int) throws -> Duration {
            guard let text = value(name) else { return .milliseconds(fallback) }
            guard let ms = Int(text), ms >= 0 else { throw Invalid(description: "\(name)=\(text): not a whole number of milliseconds") }
            return .milliseconds(ms)
        }
        func count(_ name: String, _ fallback: Int) throws -> Int {
            guard let text = value(name) else { return fallback }
            guard let n = Int(text), n > 0 else { throw Invalid(description: "\(name)=\(text): not a positive whole number") }
            return n
        }
        guard value("OTEL_SDK_DISABLED")?.lowercased() != "true" else { return nil }
        let exporter = value("OTEL_TRACES_EXPORTER")?.lowercased()
        let base = value("OTEL_EXPORTER_OTLP_ENDPOINT"), full = value("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        switch exporter {
        case "none": return nil
        case "console": destination = Destination(url: nil, headers: [], caFile: nil)
        case nil, "otlp":
            guard exporter != nil || base != nil || full != nil else { return nil }
            if let protocolName = traces("PROTOCOL"), protocolName != "http/protobuf" {
                throw Invalid(description: "OTEL_EXPORTER_OTLP_PROTOCOL=\(protocolName): only http/protobuf is spoken")
            }
            let text = full ?? (base.map { ($0.hasSuffix("/") ? String($0.dropLast()) : $0) + "/v1/traces" } ?? "http://localhost:4318/v1/traces")
            guard let url = Endpoint(text) else { throw Invalid(description: "\(text): not an http or https URL") }
            destination = Destination(url: url, headers: try Self.pairs(traces("HEADERS") ?? "", name: "OTEL_EXPORTER_OTLP_HEADERS"),
                                      caFile: traces("CERTIFICATE"))
        case let other?:
            throw Invalid(description: "OTEL_TRACES_EXPORTER=\(other): otlp, console or none")
        }
        sampler = try Self.sampler(value("OTEL_TRACES_SAMPLER") ?? "parentbased_always_on", argument: value("OTEL_TRACES_SAMPLER_ARG"))
        let resource = try Self.pairs(value("OTEL_RESOURCE_ATTRIBUTES") ?? "", name: "OTEL_RESOURCE_ATTRIBUTES")
        serviceName = value("OTEL_SERVICE_NAME") ?? resource.first { $0.0 == "service.name" }?.1 ?? "attache"
        resourceAttributes = [("service.name", serviceName)] + resource.filter { $0.0 != "service.name" }
            + [("telemetry.sdk.name", "attache"), ("telemetry.sdk.language", "swift")]
        timeout = try milliseconds(value("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT") != nil ? "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"
                                   : "OTEL_EXPORTER_OTLP_TIMEOUT", 10_000)
        scheduleDelay = try milliseconds("OTEL_BSP_SCHEDULE_DELAY", 5_000)
        maxQueueSize = try count("OTEL_BSP_MAX_QUEUE_SIZE", 16_384)
        maxExportBatchSize = try count("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 8_192)
    }

    static func sampler(_ name: String, argument: String?) throws -> Sampler {
        func ratio() throws -> Double {
            guard let argument else { return 1 }
            guard let r = Double(argument), (0...1).contains(r) else {
                throw Invalid(description: "OTEL_TRACES_SAMPLER_ARG=\(argument): a ratio between 0 and 1")
            }
            return r
        }
        switch name.lowercased() {
        case "always_on": return .alwaysOn
        case "always_off": return .alwaysOff
        case "traceidratio": return .ratio(try ratio())
        case "parentbased_always_on": return .parentBased(root: .alwaysOn)
        case "parentbased_always_off": return .parentBased(root: .alwaysOff)
        case "parentbased_traceidratio": return .parentBased(root: .ratio(try ratio()))
        default: throw Invalid(description: "OTEL_TRACES_SAMPLER=\(name): not a sampler this process has")
        }
    }

    /// `key=value,…` with percent-encoded values (W3C Baggage's form, which the headers and the
    /// resource attributes use).
    static func pairs(_ text: String, name: String) throws -> [(String, String)] {
        try text.split(separator: ",").compactMap { item in
            let trimmed = item.trimmingCharacters(in: " \t")
            guard !trimmed.isEmpty else { return nil }
            guard let equals = trimmed.firstIndex(of: "="), equals != trimmed.startIndex,
                  let value = String(trimmed[trimmed.index(after: equals)...]).removingPercentEncoding
            else { throw Invalid(description: "\(name): \(trimmed) is not key=value") }
            return (String(trimmed[..<equals]).trimmingCharacters(in: " \t"), value.trimmingCharacters(in: " \t"))
        }
    }

    /// The process's tracer, and the service that exports what it records (run it until the
    /// process stops: its graceful shutdown exports the last spans).
    public func make(logger: Logger) -> (tracer: AttacheTracer, exporter: SpanExporter) {
        let head = OTLPEncoding.Head(resource: resourceAttributes, scope: (name: "attache", version: Self.version))
        let buffer = SpanBuffer(capacity: maxQueueSize, batch: maxExportBatchSize, room: head.room)
        return (AttacheTracer(sampler: sampler, buffer: buffer),
                SpanExporter(buffer: buffer, destination: destination, head: head, scheduleDelay: scheduleDelay, timeout: timeout,
                             logger: logger))
    }

    /// Log lines in a span carry its trace id, span id and flags (`trace_id`, `span_id`,
    /// `trace_flags`), as the OpenTelemetry log data model names them.
    public static let loggingMetadata = Logger.MetadataProvider {
        guard let trace = TraceContext.current else { return [:] }
        return ["trace_id": "\(trace.traceID)", "span_id": "\(trace.spanIDText)", "trace_flags": "\(trace.sampled ? "01" : "00")"]
    }
}

extension Substring {
    func trimmingCharacters(in set: String) -> String {
        String(drop { set.contains($0) }.reversed().drop { set.contains($0) }.reversed())
    }
}

extension String {
    func trimmingCharacters(in set: String) -> String { self[...].trimmingCharacters(in: set) }

    /// `%XX` escapes decoded; nil when one is malformed or the result is not UTF-8.
    var removingPercentEncoding: String? {
        var bytes: [UInt8] = []
        var utf8 = self.utf8.makeIterator()
        while let b = utf8.next() {
            guard b == UInt8(ascii: "%") else {
                bytes.append(b)
                continue
            }
            guard let h = utf8.next(), let l = utf8.next(), let value = UInt8(String(decoding: [h, l], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(value)
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
