import ArgumentParser
import Attache
import AttacheCommandLine
import AttacheEnrichment

/// `attache config`: the configuration a command would run with — every setting, its value and
/// where it came from — read by the very code that command runs (`Serve.configure`,
/// `Worker.configure`, the enrichment options), so that what it prints cannot drift from what runs.
struct ConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attache config",
        abstract: "Print the settings a command would run with, each with its value and its source.",
        discussion: """
        Give the command and its flags as you would run it: `attache config serve --port 9000`. \
        Each setting is shown as its ATTACHE_* variable, with its value and where that came from: \
        flag, environment, file (--config-file) or default. Secrets (tokens, passwords, AWS keys) are shown as <redacted>. \
        Nothing is started. A value that does not parse is the same error the command would stop with.
        """
    )

    enum Target: String, ExpressibleByArgument, CaseIterable {
        case serve, worker, relay, lab, enrich
    }

    @Argument(help: "The command whose settings to show: serve, worker, relay, lab or enrich (also batch's and timeline's).")
    var command: Target = .serve

    @Argument(parsing: .captureForPassthrough, help: "That command's flags.")
    var arguments: [String] = []

    func run() async throws {
        let record = SettingsRecord()
        switch command {
        case .serve: _ = try await ServeCommand.parse(arguments).setUp(recording: record)
        case .worker: _ = try await WorkerCommand.parse(arguments).setUp(recording: record)
        case .relay: _ = try await RelayCommand.parse(arguments).setUp(recording: record)
        case .lab: _ = try await LabCommand.parse(arguments).setUp(recording: record)
        case .enrich:
            // What the one-shot commands read: the environment as they see it (no file).
            let settings = Settings(ProcessEnvironment(), record: record)
            let flags = try EnrichFlags.parse(arguments)
            _ = try flags.enrich.options(settings, storage: flags.storage, defaultIsolation: .inProcess)
        }
        print(record.table())
    }
}

/// The enrichment flags under the name a user typed them with (for errors and usage lines).
private struct EnrichFlags: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "attache enrich")

    @OptionGroup var enrich: EnrichOptionGroup

    @OptionGroup var storage: StorageOptionGroup
}
