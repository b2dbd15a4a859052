import ArgumentParser
import AttacheSupport

@main
struct AttacheCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attache",
        abstract: "Media enrichment for push notifications: a Linux analogue of Apple's Notification Service Extension.",
        version: AttacheVersion.string,
        // Each subcommand sets its commandName: derived, ArgumentParser would spell it with
        // String(describing:), whose dynamic casts scan every conformance record of the static
        // binary at start-up.
        subcommands: [EnrichCommand.self, ServeCommand.self, WorkerCommand.self, RelayCommand.self, LabCommand.self, ConfigCommand.self, TenantsCommand.self, BatchCommand.self, TimelineCommand.self, ProbeCommand.self, ConvertCommand.self, FetchCommand.self, OriginCommand.self, ThumbnailCommand.self]
    )

    static func main() async {
        // `attache serve|worker|relay|lab|config|tenants …` go to attache-serve untouched, `--help` included.
        ServerLauncher.handOver(Array(CommandLine.arguments.dropFirst()))
        await main(nil)
    }
}
