import ArgumentParser

@main
struct AttacheCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attache",
        abstract: "Media enrichment for push notifications: a Linux analogue of Apple's Notification Service Extension.",
        // Each subcommand sets its commandName: derived, ArgumentParser would spell it with
        // String(describing:), whose dynamic casts scan every conformance record of the static
        // binary at start-up.
        subcommands: [Enrich.self, Serve.self, Worker.self, Config.self, Batch.self, Timeline.self, Probe.self, Fetch.self, Origin.self, Thumbnail.self]
    )

    static func main() async {
        // `attache serve …` goes to the service untouched, `--help` included.
        let arguments = CommandLine.arguments
        if arguments.count > 1 && arguments[1] == "serve" {
            ServerLauncher.exec(Array(arguments.dropFirst(2)))
        }
        // `attache config …` and `attache worker …` likewise, so that their own --help answers.
        if arguments.count > 1 && ["config", "worker"].contains(arguments[1]) {
            ServerLauncher.exec(Array(arguments.dropFirst(1)))
        }
        await main(nil)
    }
}
