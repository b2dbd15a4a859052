import ArgumentParser
import Attache
import AttacheCommandLine
import AttacheEnrichment
import AttacheFetch
import AttacheMedia
import Logging

struct FetchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetch",
        abstract: "Download URLs at once through Attache's fetch engine (the same policy and limits enrich uses).",
        discussion: "Prints one summary line: transfers, failures by reason, bytes, connections opened, wall time. Bodies are discarded."
    )

    @Argument(help: "URLs to fetch.")
    var urls: [String] = []

    @Option(help: "A file with one URL per line.")
    var list: String?

    @Option(help: "Deadline for the whole run.", transform: parseDuration)
    var deadline: Duration = .seconds(60)

    @Option(name: [.customLong("allow-address"), .setting(.allowAddresses)],
            help: .setting(.allowAddresses, "Allow connections to this network (CIDR); repeatable", "comma-separated; the flags replace it"), transform: parseCIDR)
    var allowAddress: [CIDR] = []

    @Option(help: "Transfers at once (as curl's --parallel-max); the rest start as these finish.")
    var parallel: Int = 64

    private static let defaults = FetchEngine.Configuration()

    @Option(help: "Connections per host.")
    var maxConnectionsPerHost: Int = defaults.maxConnectionsPerHost

    @Option(help: "Transfers per origin handed to libcurl at once; the rest wait in the engine, in order.")
    var maxTransfersPerOrigin: Int = defaults.maxTransfersPerOrigin

    /// Apple's largest attachment (a video's), as enrichment caps it.
    @Option(help: "Byte cap per transfer.")
    var maxBytes: Int = MediaLimits().videoBytes

    func run() async throws {
        var all = urls
        if let list {
            let text = String(decoding: try readInput(list), as: UTF8.self)
            all += text.split(whereSeparator: \.isNewline).map(String.init).filter { !$0.isEmpty }
        }
        guard !all.isEmpty else { throw ValidationError("no URLs given") }
        guard parallel >= 1 else { throw ValidationError("--parallel must be at least 1") }
        var flags = Flags()
        flags.set(.allowAddresses, allowAddress)
        let allowed = try Settings(flags: flags).read { try $0.attache.cidrs(.allowAddresses) }
        let engine = try FetchEngine(
            configuration: .init(policy: AddressPolicy(allowed: allowed),
                                 maxConnectionsPerHost: maxConnectionsPerHost,
                                 maxTransfersPerOrigin: maxTransfersPerOrigin),
            logger: Logger(label: "attache.fetch", factory: { _ in SwiftLogNoOpLogHandler() })
        )
        defer { engine.shutdown() }
        let end = ContinuousClock.now + deadline
        let start = ContinuousClock.now
        let cap = maxBytes
        let results = await withTaskGroup(of: (Int, String?).self) { group in
            var results: [(Int, String?)] = []
            for (index, url) in all.enumerated() {
                if index >= parallel, let finished = await group.next() { results.append(finished) }
                group.addTask {
                    do {
                        var request = FetchRequest(url: url, maxBytes: cap)
                        request.stream = { _ in true }  // counted and dropped as they arrive
                        return (try await engine.fetch(request, deadline: end).bytes, nil)
                    } catch let error as FetchError {
                        return (0, error.code.description)
                    } catch {
                        return (0, "cancelled")
                    }
                }
            }
            return await group.reduce(into: results) { $0.append($1) }
        }
        let elapsed = start.duration(to: .now)
        let bytes = results.reduce(0) { $0 + $1.0 }
        var failures: [String: Int] = [:]
        for case (_, let reason?) in results { failures[reason, default: 0] += 1 }
        let failed = failures.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
        let ms = elapsed.milliseconds
        writeStdout(Array("transfers=\(results.count) failed=\(failed.isEmpty ? "0" : failed) bytes=\(bytes) connections=\(engine.connectionsOpened) wall_ms=\(Int(ms.rounded()))\n".utf8))
        if !failures.isEmpty { throw ExitCode(1) }
    }
}
