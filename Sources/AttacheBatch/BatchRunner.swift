import Attache
import AttacheEnrichment
import AttachePayload
import AttacheStore
import AttacheSupport
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

extension BatchRunner {
    public struct Configuration: Sendable {
        public var input: BatchInput
        /// A JSON Lines file, or a directory (one file per input, under the input's name).
        public var output: String
        public var outputIsDirectory: Bool
        /// One line per payload (rejected lines too): the batch's ledger, also what `resume` reads.
        public var report: String
        /// Lines that are not payloads, as they were.
        public var rejects: String
        public var concurrency: Int
        public var resume: Bool
        /// Process only inputs whose position p (0-based) has p % count == index.
        public var shard: (index: Int, count: Int)?

        /// Payloads enriched at once when the caller names no number (`attache batch --concurrency`).
        public static let defaultConcurrency = 16

        public init(input: BatchInput, output: String, outputIsDirectory: Bool = false, report: String? = nil, rejects: String? = nil,
                    concurrency: Int = Configuration.defaultConcurrency, resume: Bool = false, shard: (index: Int, count: Int)? = nil) {
            self.input = input
            self.output = output
            self.outputIsDirectory = outputIsDirectory
            self.report = report ?? (outputIsDirectory ? "\(output)/report.jsonl" : "\(output).report.jsonl")
            self.rejects = rejects ?? (outputIsDirectory ? "\(output)/rejects.jsonl" : "\(output).rejects.jsonl")
            self.concurrency = max(1, concurrency)
            self.resume = resume
            self.shard = shard
        }
    }
}

/// Where a batch stands; handed to the progress callback as it goes.
public struct BatchProgress: Sendable {
    public var total = 0
    public var done = 0
    /// Already done by an earlier, interrupted run.
    public var resumed = 0
    public var outcomes: [String: Int] = [:]
    public var reasons: [String: Int] = [:]
    public var elapsed: Duration = .zero
    /// How many times the outputs were synced to disk and the ledger lines they cover written.
    public var commits = 0

    public var rate: Double {
        let seconds = elapsed.seconds
        return seconds > 0 ? Double(done - resumed) / seconds : 0
    }
}

/// Runs many payloads through one `Enrichment` (whose result cache makes every distinct media
/// URL download and render once), writes the payloads to send in input order, and keeps a
/// ledger that makes the batch resumable after an interruption with nothing lost or doubled.
public struct BatchRunner: Sendable {
    public let configuration: BatchRunner.Configuration
    public let enrichment: Enrichment

    public init(configuration: BatchRunner.Configuration, enrichment: Enrichment) {
        self.configuration = configuration
        self.enrichment = enrichment
    }

    private enum Answer: Sendable {
        case emitted(Emission)
        case rejected(PayloadError)
    }

    public func run(progress: @Sendable (BatchProgress) -> Void = { _ in }) async throws -> BatchProgress {
        let start = ContinuousClock.now
        try configuration.checkDistinctFiles()
        var (items, identity) = try configuration.input.read()
        if let shard = configuration.shard {
            items = items.enumerated().filter { $0.offset % shard.count == shard.index }.map(\.element)
            identity.shard = "\(shard.index)/\(shard.count)"
        }
        if configuration.outputIsDirectory { try FileStore.makeDirectories(configuration.output) }

        // The ledger decides what is done; the output and rejects files are cut back to match it.
        // Checked before anything is opened for writing, so a refused resume changes nothing.
        if configuration.resume { try checkIdentity(identity) }
        let report = try LineFile(path: configuration.report, resume: configuration.resume)
        let done = report.lines.count
        let rejectedBefore = report.lines.filter { Self.isRejection($0) }.count
        let output = configuration.outputIsDirectory ? nil : try LineFile(path: configuration.output, resume: configuration.resume) { lines in
            min(lines.count, done - rejectedBefore)
        }
        let rejects = try LineFile(path: configuration.rejects, resume: configuration.resume) { lines in
            min(lines.count, rejectedBefore)
        }

        var recordIdentity = report.lines.isEmpty
        var state = BatchProgress()
        state.total = items.count
        state.done = min(done, items.count)
        state.resumed = state.done
        for line in report.lines { tally(line, into: &state) }
        progress(state)
        var lastProgress = ContinuousClock.now

        var commit = LedgerCommit(outputDirectory: configuration.outputIsDirectory ? configuration.output : nil,
                                  outputs: [output, rejects].compactMap { $0 }, ledger: report)
        let pending = Array(items.dropFirst(state.done))
        try await withThrowingTaskGroup(of: (Int, Answer).self) { group in
            var next = 0
            var ready: [Int: Answer] = [:]
            var written = 0
            while next < min(configuration.concurrency, pending.count) {
                group.addTask(operation: Self.enrich(pending[next], index: next, with: enrichment))
                next += 1
            }
            while let (index, answer) = try await group.next() {
                ready[index] = answer
                while let answer = ready.removeValue(forKey: written) {
                    let (line, file) = try write(pending[written], answer, identity: recordIdentity ? identity : nil,
                                                 output: output, rejects: rejects)
                    commit.add(line, file: file)
                    recordIdentity = false
                    tally(line, into: &state)
                    state.done += 1
                    written += 1
                }
                if commit.isDue { try commit.flush(); state.commits = commit.commits }
                if next < pending.count {
                    group.addTask(operation: Self.enrich(pending[next], index: next, with: enrichment))
                    next += 1
                }
                let now = ContinuousClock.now
                if now - lastProgress >= .milliseconds(200) {
                    state.elapsed = start.duration(to: now)
                    progress(state)
                    lastProgress = now
                }
            }
        }
        try commit.flush(final: true)
        state.commits = commit.commits
        state.elapsed = start.duration(to: .now)
        progress(state)
        return state
    }

    private static func enrich(_ item: BatchItem, index: Int, with enrichment: Enrichment) -> @Sendable () async -> (Int, Answer) {
        {
            if let problem = item.unreadable { return (index, .rejected(PayloadError(.unreadable, problem))) }
            do throws(PayloadError) {
                let first = try await enrichment.enrich(item.bytes, identifier: item.name)
                return (index, .emitted(await enrichment.awaitingConversions(first, bytes: item.bytes, identifier: item.name)))
            } catch {
                return (index, .rejected(error))
            }
        }
    }

    /// A ledger whose first entry names another input is refused. Ledgers from before the input
    /// was recorded (and empty ones) resume as they always did.
    private func checkIdentity(_ identity: BatchInputIdentity) throws {
        guard let bytes = try? readFile(configuration.report),
              let first = bytes.split(separator: 0x0A).first,
              let recorded = BatchInputIdentity(json: (try? JSONParser().parse(Array(first)))?.objectValue?["input"]) else { return }
        if let why = identity.mismatch(with: recorded) {
            throw BatchError(.foreignLedger, path: configuration.report, "--resume: \(configuration.report) is the ledger of another input (\(why)); "
                + "run without --resume to start over, or give another --output")
        }
    }

    /// Writes one answer — the payload (output) or the rejected line — and returns its ledger
    /// line (and the output file, in a directory) for `LedgerCommit`, which writes it once the
    /// output is on disk. The ledger's first entry also says what the input was (`input`).
    private func write(_ item: BatchItem, _ answer: Answer, identity: BatchInputIdentity?,
                       output: LineFile?, rejects: LineFile) throws -> (line: [UInt8], file: String?) {
        var file: String?
        var entry = JSONObject()
        entry["line"] = .int(item.line)
        entry["source"] = .string(item.name)
        if let identity { entry["input"] = identity.json }
        switch answer {
        case .emitted(let emission):
            if configuration.outputIsDirectory {
                let path = "\(configuration.output)/\(item.name)"
                try writeFileAtomically(path, emission.bytes)
                file = path
            } else {
                try output?.append(Self.oneLine(emission.bytes))
            }
            let r = emission.report
            entry["outcome"] = .string(r.outcome.rawValue)
            entry["reason"] = r.reason.map { .string($0.description) } ?? .null
            entry["elapsed_ms"] = .double((r.elapsedMs * 10).rounded() / 10)
            entry["attachments"] = .array(r.attachments.map { a in
                .object(JSONObject([
                    "id": .string(a.id), "source": .string(a.source), "outcome": .string(a.outcome.description),
                    "reason": a.reason.map { .string($0.description) } ?? .null, "cache": a.cache.map { .string($0.rawValue) } ?? .null,
                ]))
            })
        case .rejected(let error):
            try rejects.append(Self.oneLine(item.bytes))
            entry["outcome"] = .string("rejected")
            entry["reason"] = .string(error.code.description)
            entry["message"] = .string(error.message)
        }
        return (JSONWriter.bytes(.object(entry)), file)
    }

    /// JSON Lines needs one line per payload: a payload with raw line breaks (pretty-printed, from
    /// a directory) is written compactly instead.
    static func oneLine(_ bytes: [UInt8]) -> [UInt8] {
        guard bytes.contains(where: { $0 == 0x0A || $0 == 0x0D }) else { return bytes }
        if let value = try? JSONParser().parse(bytes) { return JSONWriter.bytes(value) }
        return bytes.map { $0 == 0x0A || $0 == 0x0D ? 0x20 : $0 }
    }

    static func isRejection(_ line: [UInt8]) -> Bool {
        (try? JSONParser().parse(line))?.objectValue?["outcome"]?.stringValue == "rejected"
    }

    private func tally(_ line: [UInt8], into state: inout BatchProgress) {
        guard let entry = (try? JSONParser().parse(line))?.objectValue else { return }
        if let outcome = entry["outcome"]?.stringValue { state.outcomes[outcome, default: 0] += 1 }
        if let reason = entry["reason"]?.stringValue { state.reasons[reason, default: 0] += 1 }
    }
}

/// Ledger lines wait until the outputs they cover are on disk: after a crash or a power cut the
/// ledger never names a payload whose output is gone (resume cuts outputs back to the ledger, so
/// an output ahead of it costs only a redo). One fsync per many lines — every 512 lines or every
/// second, and at the end — not one per payload.
struct LedgerCommit {
    /// Where one file per payload goes (synced with its directory), or nil for JSON Lines.
    let outputDirectory: String?
    let outputs: [LineFile]
    let ledger: LineFile
    private var lines: [[UInt8]] = []
    private var files: [String] = []
    private var last = ContinuousClock.now
    /// How many commits wrote lines.
    private(set) var commits = 0

    init(outputDirectory: String?, outputs: [LineFile], ledger: LineFile) {
        self.outputDirectory = outputDirectory
        self.outputs = outputs
        self.ledger = ledger
    }

    mutating func add(_ line: [UInt8], file: String?) {
        lines.append(line)
        if let file { files.append(file) }
    }

    var isDue: Bool { lines.count >= 512 || (!lines.isEmpty && ContinuousClock.now - last >= .seconds(1)) }

    /// Syncs the outputs, then writes the waiting ledger lines; `final` syncs the ledger too.
    mutating func flush(final: Bool = false) throws {
        guard !lines.isEmpty else { return }
        for output in outputs { try output.sync() }
        for file in files { try syncFile(file) }
        if let outputDirectory, !files.isEmpty { try syncDirectory(outputDirectory) }
        try ledger.append(contentsOf: lines)
        if final { try ledger.sync() }
        lines = []
        files = []
        last = .now
        commits += 1
    }
}
