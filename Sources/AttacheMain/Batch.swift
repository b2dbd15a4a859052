import ArgumentParser
import Attache
import AttacheBatch
import AttacheCommandLine
import AttacheEnrichment
import AttacheFetch
import Logging
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

struct BatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "batch",
        abstract: "Pre-process the media of many payloads: JSON Lines or a directory in, payloads to send out, in order.",
        discussion: """
        Every distinct media URL is fetched and rendered once per batch. The report (one JSON line per \
        payload: line, outcome, reason, timings) is the batch's ledger: after an interruption, --resume \
        continues where it stops, with no payload lost or written twice; its first line records the \
        input (path, size, a hash of its start, the shard), and resuming against another input is refused. Lines that are not JSON objects \
        are reported with their line number and copied to the rejects file; the batch goes on. Exit \
        status is non-zero only when the batch itself could not run — as when two of the input, \
        --output, --report and --rejects name the same file, which is refused before anything is written.

        Examples:
          attache batch Samples/campaign.jsonl --output send.jsonl --allow-address 127.0.0.1/32
          attache batch campaign.jsonl --output send.jsonl --resume
          attache batch campaign.jsonl --output part-2.jsonl --shard 2/8
        """
    )

    @Argument(help: "JSON Lines file (- for standard input), or a directory of .json/.apns files.")
    var input: String

    @Option(help: "JSON Lines file for the payloads to send, or a directory (a file per input).")
    var output: String

    @Option(help: "Report file (default OUTPUT.report.jsonl, or OUTPUT/report.jsonl for a directory).")
    var report: String?

    @Option(help: "Rejected lines (default OUTPUT.rejects.jsonl, or OUTPUT/rejects.jsonl).")
    var rejects: String?

    @Option(help: "Payloads enriched at once.")
    var concurrency: Int = BatchRunner.Configuration.defaultConcurrency

    @Flag(help: "Continue an interrupted batch from its report.")
    var resume = false

    @Option(help: "Process only share I of N (0-based), e.g. 2/8 for a job runner's index 2 of 8.", transform: parseShard)
    var shard: Shard?

    @OptionGroup var enrich: EnrichOptionGroup

    @OptionGroup var storage: StorageOptionGroup

    @OptionGroup var conversions: ConversionWaitOptionGroup

    struct Shard: Sendable {
        var index: Int
        var count: Int
    }

    func validate() throws {
        guard concurrency >= 1 && concurrency <= 1024 else { throw ValidationError("--concurrency must be between 1 and 1024") }
    }

    func run() async throws {
        bootstrapLogging(level: .warning)
        var options = try enrich.configuration(storage: storage, door: .batch, more: [conversions])
        // One batch, one cache: a URL named by a thousand payloads is fetched once. Work goes on
        // past its payload's deadline as in the service (warm-through), so that a conversion the
        // payload waits for is not cut off at that deadline.
        options.cache = MediaCache.Configuration(timeToLive: .seconds(86_400), maxEntries: 1_000_000,
                                                 warmThrough: options.media.conversionWait == nil ? nil : .seconds(30))
        let source = BatchInput.at(input)
        let outputIsDirectory: Bool = {
            if case .directory = source { return !output.hasSuffix(".jsonl") && !output.hasSuffix(".json") }
            return output.hasSuffix("/")
        }()
        let configuration = BatchRunner.Configuration(
            input: source, output: output, outputIsDirectory: outputIsDirectory, report: report, rejects: rejects,
            concurrency: concurrency, resume: resume, shard: shard.map { ($0.index, $0.count) }
        )
        let enrichment: Enrichment
        do {
            // Before the store is made: a refused batch leaves nothing behind.
            try configuration.checkDistinctFiles()
            enrichment = try Enrichment(configuration: options)
        } catch {
            printError("attache: \(error)")
            throw ExitCode(1)
        }
        defer { enrichment.shutdown() }
        let display = ProgressDisplay(terminal: isatty(STDERR_FILENO) != 0)
        let final: BatchProgress
        do {
            final = try await BatchRunner(configuration: configuration, enrichment: enrichment).run { display.show($0) }
        } catch {
            printError("attache: batch: \(error)")
            throw ExitCode(1)
        }
        display.finish(final, cache: enrichment.services.cache?.statistics, engine: enrichment.services.engine)
    }
}

func parseShard(_ text: String) throws -> BatchCommand.Shard {
    let parts = text.split(separator: "/")
    guard parts.count == 2, let i = Int(parts[0]), let n = Int(parts[1]), n >= 1, i >= 0, i < n else {
        throw ValidationError("--shard is I/N with 0 <= I < N, e.g. 0/4")
    }
    return BatchCommand.Shard(index: i, count: n)
}

/// A progress bar on a terminal, a plain line every few seconds otherwise, and a summary.
final class ProgressDisplay: Sendable {
    let terminal: Bool
    private let lastLine = Mutex<(at: ContinuousClock.Instant, done: Int)?>(nil)

    init(terminal: Bool) {
        self.terminal = terminal
    }

    func show(_ p: BatchProgress) {
        let counts = p.outcomes.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: "  ")
        let percent = p.total > 0 ? p.done * 100 / p.total : 100
        let left = p.total - p.done
        let eta = p.rate > 0 ? "\(Int((Double(left) / p.rate).rounded(.up)))s" : "-"
        let rate = String(Int(p.rate.rounded()))
        if terminal {
            let width = 24
            let filled = p.total > 0 ? width * p.done / p.total : width
            let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
            writeStderr(Array("\r\u{1B}[2K\(bar) \(p.done)/\(p.total) \(percent)%  \(rate)/s  ETA \(eta)  \(counts)".utf8))
        } else {
            let now = ContinuousClock.now
            let due = lastLine.withLock { last -> Bool in
                if let last, last.done == p.done { return false }
                guard p.done == p.total || last.map({ now - $0.at >= .seconds(2) }) ?? true else { return false }
                last = (now, p.done)
                return true
            }
            if due { printError("batch: \(p.done)/\(p.total) (\(percent)%), \(rate)/s, ETA \(eta); \(counts)") }
        }
    }

    func finish(_ p: BatchProgress, cache: MediaCache.Statistics?, engine: FetchEngine) {
        if terminal { writeStderr(Array("\n".utf8)) }
        let seconds = p.elapsed.seconds
        var lines = ["batch done: \(p.done) payloads (\(p.resumed) from an earlier run) in \(String(format1: seconds)) s"]
        lines.append("  outcomes: " + p.outcomes.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        if !p.reasons.isEmpty {
            lines.append("  reasons: " + p.reasons.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        }
        if let cache {
            lines.append("  distinct media URLs: \(cache.misses), each fetched at most once; answers reused \(cache.hits + cache.shared) times")
        }
        lines.append("  fetched: \(engine.bytesReceived) bytes over \(engine.connectionsOpened) connections")
        printError(lines.joined(separator: "\n"))
    }
}

extension String {
    init(format1 value: Double) {
        let tenths = Int((value * 10).rounded())
        self = "\(tenths / 10).\(tenths % 10)"
    }
}
