import ArgumentParser
import Attache
import AttacheCommandLine
import AttacheEnrichment
import AttacheFetch
import AttacheIsolation
import AttacheMedia
import AttachePayload
import Logging
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

struct EnrichCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "enrich",
        abstract: "Enrich one push payload: fetch, validate and thumbnail its media, print the payload to send.",
        discussion: """
        stdout carries only the payload to send (enriched, or the original byte for byte). Exit status is 0 \
        whenever a payload was emitted, whatever the outcome; 2 when the input is not a payload (not a JSON \
        object, nested deeper than 64 levels, or over 64 KiB). \
        Every enrichment option can also come from its ATTACHE_* variable (see each); a flag wins, and a \
        value that does not parse is an error at start.

        Examples:
          attache enrich Samples/payloads/fcm.json --deadline 2s --allow-address 127.0.0.1/32
          attache enrich - --report - < payload.json
          attache enrich payload.json --public-base-url https://cdn.example.com/media
        """
    )

    @Argument(help: "Payload file, or - for standard input.")
    var file: String = "-"

    @OptionGroup var enrich: EnrichOptionGroup

    @OptionGroup var storage: StorageOptionGroup

    @Option(help: "Write a JSON report to FILE (- for stderr).")
    var report: String?

    @Flag(help: "Print a one-line outcome on stderr.")
    var summary = false

    func run() async throws {
        bootstrapLogging(level: .notice)
        let input: [UInt8]
        do {
            input = try readInput(file)
        } catch {
            printError("attache: \(error)")
            throw ExitCode(2)
        }
        let options = try enrich.configuration(storage: storage, door: .enrich)
        let runtime = ExtensionRuntime(configuration: options.runtime)
        // Exactly one payload out: whoever claims the emission first — the enrichment, or a
        // SIGTERM/SIGINT that comes before it — writes it.
        let claim = EmissionClaim()
        let emitter = Emitter(file: file, report: report, summary: summary)

        // Installed before the store is made, so a signal from the moment the media directory
        // exists is answered by the handler.
        let started = Mutex<Enrichment?>(nil)
        let signals = InterruptHandler { signal in
            guard claim.take(), let emission = try? runtime.passOn(input, reason: .interrupted) else { return }
            try? emitter.emit(emission)
            started.withLock { $0 }?.scratch.removeAll()
            // As a process killed by the signal would: 128 + its number, at once (no exit
            // handlers racing the threads still at work).
            _exit(128 + signal)
        }
        defer { signals.cancel() }
        let enrichment: Enrichment
        do {
            enrichment = try Enrichment(configuration: options)
        } catch {
            // The store cannot be used (say, the media directory cannot be made), or the decoder
            // sandbox asked for cannot be started: the payload still goes out, unchanged, with
            // the reason.
            printError("attache: \(error)")
            let emission: Emission
            do { emission = try runtime.passOn(input, reason: error is IsolationError ? .extensionFailed : .storeFailed) } catch {
                printError("attache: \(file): \(error)")
                throw ExitCode(2)
            }
            if claim.take() { try emitter.emit(emission) }
            return
        }
        started.withLock { $0 = enrichment }
        defer { enrichment.shutdown() }
        let emission: Emission
        do {
            emission = try await enrichment.enrich(input, identifier: file)
        } catch {
            printError("attache: \(file): \(error)")
            throw ExitCode(2)
        }
        guard claim.take() else {
            // A signal claimed the output; its handler writes it and ends the process.
            while true { pause() }
        }
        try emitter.emit(emission)
    }
}

/// Writes an emission as `attache enrich` does: the payload on stdout, the report and summary
/// where asked.
struct Emitter: Sendable {
    let file: String
    let report: String?
    let summary: Bool

    func emit(_ emission: Emission) throws {
        writeStdout(emission.bytes)
        if let report {
            let text = JSONWriter.bytes(emission.report.json) + [0x0a]
            if report == "-" { writeStderr(text) } else { try writeFile(report, text) }
        }
        if summary { printError("\(file): \(emission.report.summary)") }
    }
}
