import ArgumentParser

@main
struct AttacheCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attache",
        abstract: "Media enrichment for push notifications: a Linux analogue of Apple's Notification Service Extension.",
        subcommands: [Enrich.self, Serve.self, Batch.self, Timeline.self, Probe.self, Fetch.self, Origin.self, Thumbnail.self]
    )
}
