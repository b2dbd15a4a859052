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
        let record: SettingsRecord
        switch command {
        case .serve: record = try Self.recorded(ServeCommand.parse(arguments))
        case .worker: record = try Self.recorded(WorkerCommand.parse(arguments))
        case .relay: record = try Self.recorded(RelayCommand.parse(arguments))
        case .lab: record = try Self.recorded(LabCommand.parse(arguments))
        case .enrich:
            // What the one-shot commands read: their flags, then the environment as they see it (no file).
            let flags = try EnrichFlags.parse(arguments)
            let settings = Settings(flags: Flags([flags.enrich, flags.storage]))
            _ = try settings.read { try Enrichment.Configuration(settings: $0, door: .enrich) }
            record = settings.record
        }
        print(record.table())
    }

    /// What `command` reads, by the code its `run` reads it with.
    private static func recorded<Command: LongRunningCommand>(_ command: Command) throws -> SettingsRecord {
        let settings = try command.settings()
        _ = try settings.read(command.configure)
        return settings.record
    }
}

/// The enrichment flags under the name a user typed them with (for errors and usage lines).
private struct EnrichFlags: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "attache enrich")

    @OptionGroup var enrich: EnrichOptionGroup

    @OptionGroup var storage: StorageOptionGroup
}
