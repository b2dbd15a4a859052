import ArgumentParser
import AttacheCommandLine
import Attache
import AttacheFetch
import AttacheMedia
import AttachePayload
import Logging
#if canImport(Glibc)
import Glibc
#endif

struct Enrich: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "enrich",
        abstract: "Enrich one push payload: fetch, validate and thumbnail its media, print the payload to send.",
        discussion: """
        stdout carries only the payload to send (enriched, or the original byte for byte). Exit status is 0 \
        whenever a payload was emitted, whatever the outcome; 2 when the input is not a payload (not a JSON \
        object, nested deeper than 64 levels, or over 64 KiB). \
        Environment: ATTACHE_ALLOW_ADDRESSES (comma-separated CIDRs, added to --allow-address).
        """
    )

    @Argument(help: "Payload file, or - for standard input.")
    var file: String = "-"

    @OptionGroup var enrich: EnrichOptionGroup

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
        let options = try enrich.options()

        let enrichment: Enrichment
        do {
            enrichment = try Enrichment(options: options)
        } catch {
            printError("attache: \(error)")
            throw ExitCode(1)
        }
        defer { enrichment.shutdown() }
        let emission: Emission
        do {
            emission = try await enrichment.enrich(input, identifier: file)
        } catch {
            printError("attache: \(file): \(error)")
            throw ExitCode(2)
        }
        writeStdout(emission.bytes)
        if let report {
            let text = JSONWriter.bytes(emission.report.json) + [0x0a]
            if report == "-" { writeStderr(text) } else { try writeFile(report, text) }
        }
        if summary { printError("\(file): \(emission.report.summary)") }
    }
}
