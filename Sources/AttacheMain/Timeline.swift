import ArgumentParser
import Attache
import AttacheCommandLine
import AttacheEnrichment
import AttachePayload
import AttacheTimeline
import Logging

struct TimelineCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "timeline",
        abstract: "Enrich one payload with full tracing and draw its timeline; or sweep deadlines to find the budget it needs.",
        discussion: """
        One lane per attachment: dns, connect, tls, first byte, download, inspect, render, store; the deadline; \
        the moment the payload was emitted; the outcome. --svg writes the same picture as SVG. --sweep 100ms...5s \
        runs the payload at each deadline (--steps of them) and reports the smallest deadline at which each \
        attachment makes it. Nothing is cached between runs. Try it against `attache origin` with faults, \
        e.g. an image URL ending in ?profile=3g or ?delay=800.

        Examples:
          attache timeline Samples/payloads/slow.json --deadline 1500ms --allow-address 127.0.0.1/32 --svg timeline.svg
          attache timeline Samples/payloads/slow.json --sweep 100ms...5s --allow-address 127.0.0.1/32
        """
    )

    @Argument(help: "Payload file, or - for standard input.")
    var file: String

    @Option(help: "Write the timeline as SVG to this file.")
    var svg: String?

    @Option(help: "Sweep deadlines over a range, e.g. 100ms...5s.")
    var sweep: String?

    @Option(help: "How many deadlines a sweep tries.")
    var steps: Int = 20

    @OptionGroup var enrich: EnrichOptionGroup

    @OptionGroup var storage: StorageOptionGroup

    func validate() throws {
        if let sweep, DeadlineSweep.range(sweep) == nil { throw ValidationError("--sweep is FROM...TO, e.g. 100ms...5s") }
        guard steps >= 2 && steps <= 500 else { throw ValidationError("--steps must be between 2 and 500") }
    }

    func run() async throws {
        bootstrapLogging(level: .warning)
        let bytes = try readInput(file)
        let enrichment = try Enrichment(configuration: try enrich.configuration(storage: storage, door: .enrich))
        defer { enrichment.shutdown() }
        do {
            if let sweep, let (from, to) = DeadlineSweep.range(sweep) {
                try await runSweep(bytes, enrichment: enrichment, from: from, to: to)
            } else {
                let emission = try await enrichment.enrich(bytes, identifier: file)
                let renderer = TimelineRenderer(report: emission.report)
                writeStdout(Array((renderer.text() + "\n").utf8))
                if let svg { try writeFile(svg, Array(renderer.svg().utf8)) }
            }
        } catch let error as PayloadError {
            printError("attache: \(file): \(error)")
            throw ExitCode(2)
        }
    }

    private func runSweep(_ bytes: [UInt8], enrichment: Enrichment, from: Duration, to: Duration) async throws {
        let step = (to - from) / (steps - 1)
        let deadlines = DeadlineSweep.deadlines(from: from, to: to, step: step)
        let runs = try await DeadlineSweep(enrichment: enrichment).run(bytes, deadlines: deadlines) { run in
            let marks = run.ids.map { "\($0) \(run.attached[$0] == true ? "✓" : "✗")" }.joined(separator: "  ")
            writeStdout(Array("deadline \(Self.ms(run.deadline)) ms  \(run.outcome.rawValue)  \(marks)\n".utf8))
        }
        writeStdout(Array("smallest deadline at which each attachment makes it (step \(Self.ms(step)) ms):\n".utf8))
        for (id, deadline) in DeadlineSweep.flipPoints(runs) {
            writeStdout(Array("  \(id): \(deadline.map { "\(Self.ms($0)) ms" } ?? "not within \(Self.ms(to)) ms")\n".utf8))
        }
    }

    static func ms(_ d: Duration) -> Int {
        Int(d.milliseconds)
    }
}
