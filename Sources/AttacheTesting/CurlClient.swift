import Foundation

/// curl(1) as a client, sending to Attache's HTTP doors: HTTP/2 with prior knowledge, as a provider's
/// APNs client speaks to a clear-text sidecar, or HTTP/1.1, as firebase-admin sends. A process per
/// request, so each request has a connection of its own and nothing of the tests' making stands
/// between the client and the door.
public struct CurlClient: Sendable {
    public struct Answer: Sendable {
        public var status: Int
        /// The answer's fields by lower-case name (the last, when one came twice).
        public var fields: [String: String]
        public var body: [UInt8]
        public var text: String { String(decoding: body, as: UTF8.self) }
    }

    public enum Version: Sendable { case http2PriorKnowledge, http1 }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    public var version: Version
    /// The most a request may take, however it goes.
    public var timeout: Duration

    public init(version: Version = .http2PriorKnowledge, timeout: Duration = .seconds(20)) {
        self.version = version
        self.timeout = timeout
    }

    /// POSTs `body` with `fields` (`Name: value`; `Name:` removes a field curl would add). curl's
    /// own Accept, User-Agent and form Content-Type are left out, so the receiver shows whether
    /// anything between added them.
    public func post(_ url: String, body: [UInt8], fields: [String] = []) async throws -> Answer {
        let defaults = ["accept:", "user-agent:"]
            + (fields.contains { $0.lowercased().hasPrefix("content-type:") } ? [] : ["content-type:"])
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        var arguments = ["--silent", "--show-error", "--include", "--max-time", "\(seconds)",
                         version == .http1 ? "--http1.1" : "--http2-prior-knowledge", "--data-binary", "@-"]
        for field in fields + defaults { arguments += ["--header", field] }
        arguments.append(url)
        let (status, output, errors) = try await run("/usr/bin/curl", arguments, input: body)
        guard status == 0 else {
            throw Failure(description: "curl \(url) exited \(status): \(String(decoding: errors, as: UTF8.self))")
        }
        return try Self.parse(output)
    }

    /// `--include`'s output: the status line, the fields, a blank line, the body (interim 1xx
    /// answers skipped).
    static func parse(_ output: [UInt8]) throws -> Answer {
        var rest = output[...]
        while true {
            guard let end = rest.firstRange(of: Array("\r\n\r\n".utf8)) else {
                throw Failure(description: "no header block in curl's output")
            }
            let lines = String(decoding: rest[..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
            rest = rest[end.upperBound...]
            let words = lines[0].split(separator: " ")
            guard words.count >= 2, let status = Int(words[1]) else {
                throw Failure(description: "not a status line: \(lines[0])")
            }
            if (100..<200).contains(status) { continue }
            var fields: [String: String] = [:]
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            return Answer(status: status, fields: fields, body: Array(rest))
        }
    }

    /// Runs curl with the body, its output and its errors in files: nothing blocks a thread of
    /// the caller's (the door under test may need every one of them) while it waits.
    private func run(_ path: String, _ arguments: [String], input: [UInt8]) async throws -> (Int32, [UInt8], [UInt8]) {
        let directory = try makeTempDirectory()
        defer { removeTree(directory) }
        let files = (input: directory + "/body", output: directory + "/out", errors: directory + "/err")
        try Data(input).write(to: URL(fileURLWithPath: files.input))
        _ = FileManager.default.createFile(atPath: files.output, contents: nil)
        _ = FileManager.default.createFile(atPath: files.errors, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments.map { $0 == "@-" ? "@" + files.input : $0 }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: files.output))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: files.errors))
        let exited = AsyncStream<Int32>.makeStream()
        process.terminationHandler = { exited.continuation.yield($0.terminationStatus); exited.continuation.finish() }
        try process.run()
        var status: Int32 = -1
        for await code in exited.stream { status = code }
        return (status, Array(try Data(contentsOf: URL(fileURLWithPath: files.output))),
                Array(try Data(contentsOf: URL(fileURLWithPath: files.errors))))
    }
}
