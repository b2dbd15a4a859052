import ArgumentParser
import AttacheCommandLine
import AttacheSupport
#if canImport(Glibc)
import Glibc
#endif

/// The long-running commands are the `attache-serve` executable, installed beside `attache` and
/// run in its place (same process id, so signals and exit codes are its own). It links Hummingbird
/// and, through it, Foundation and ICU; kept out of `attache`, they cost no other command ~6 ms and
/// ~8 MB at start. `attache NAME …` is handed over before anything here parses it, so that their
/// own `--help` answers (`AttacheCommand.main`); these types list them in `attache --help`.
protocol ServiceCommand: ParsableCommand {
    /// attache-serve's arguments before the user's (none for the service).
    static var handOver: [String] { get }
    var arguments: [String] { get }
}

extension ServiceCommand {
    func run() throws {
        ServerLauncher.exec(Self.handOver + arguments)
    }
}

struct ServeCommand: ServiceCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the enrichment service that push pipelines call per message.",
        discussion: "Runs attache-serve from the directory of attache (else from PATH); `attache serve --help` lists its options."
    )
    static let handOver: [String] = []

    @Argument(parsing: .captureForPassthrough, help: "Options of the service.")
    var arguments: [String] = []
}

struct WorkerCommand: ServiceCommand {
    static let configuration = CommandConfiguration(
        commandName: "worker",
        abstract: "Take payloads off a NATS JetStream stream and publish one enriched payload per payload.",
        discussion: "Runs `attache-serve worker` from the directory of attache (else from PATH); `attache worker --help` lists its options."
    )
    static let handOver = ["worker"]

    @Argument(parsing: .captureForPassthrough, help: "Options of the worker.")
    var arguments: [String] = []
}

struct RelayCommand: ServiceCommand {
    static let configuration = CommandConfiguration(
        commandName: "relay",
        abstract: "Accept APNs and FCM send requests, enrich their payloads, and forward them to Apple or Google.",
        discussion: "Runs `attache-serve relay` from the directory of attache (else from PATH); `attache relay --help` lists its options."
    )
    static let handOver = ["relay"]

    @Argument(parsing: .captureForPassthrough, help: "Options of the relay.")
    var arguments: [String] = []
}

struct LabCommand: ServiceCommand {
    static let configuration = CommandConfiguration(
        commandName: "lab",
        abstract: "Open a page in the browser that runs a payload through the enrichment live: its timeline, result, device previews and a deadline sweep.",
        discussion: "Runs `attache-serve lab` from the directory of attache (else from PATH); `attache lab --help` lists its options."
    )
    static let handOver = ["lab"]

    @Argument(parsing: .captureForPassthrough, help: "Options of the lab.")
    var arguments: [String] = []
}

/// The tenants file's tools, beside the service that reads the file (and links its YAML reader).
struct TenantsCommand: ServiceCommand {
    static let configuration = CommandConfiguration(
        commandName: "tenants",
        abstract: "Make a tenant's token and its hash, or check a tenants file as the service would read it.",
        discussion: "Runs `attache-serve tenants` from the directory of attache (else from PATH); `attache tenants --help` explains it."
    )
    static let handOver = ["tenants"]

    @Argument(parsing: .captureForPassthrough, help: "token, or check and a tenants file.")
    var arguments: [String] = []
}

/// Reads the settings with the long-running commands' own code, which lives in attache-serve.
struct ConfigCommand: ServiceCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Print the settings a command would run with, each with its value and its source.",
        discussion: "Runs `attache-serve config` from the directory of attache (else from PATH); `attache config --help` explains it."
    )
    static let handOver = ["config"]

    @Argument(parsing: .captureForPassthrough, help: "serve, worker or enrich, and that command's flags.")
    var arguments: [String] = []
}

enum ServerLauncher {
    static let name = "attache-serve"
    static let commands: [any ServiceCommand.Type] = [ServeCommand.self, WorkerCommand.self, RelayCommand.self, LabCommand.self, ConfigCommand.self, TenantsCommand.self]

    /// Replaces this process with attache-serve; returns only by exiting with an error.
    static func exec(_ arguments: [String]) -> Never {
        let argv = ([name] + arguments).map { strdup($0) } + [nil]
        if let beside = pathBesideThisExecutable(name) {
            execv(beside, argv)
        }
        execvp(name, argv)
        printError("attache: cannot run \(name) (looked beside attache and in PATH): \(String(cString: strerror(errno)))")
        exit(1)
    }

    /// `attache NAME …` for a long-running command: handed over, never returns.
    static func handOver(_ arguments: [String]) {
        guard let name = arguments.first,
              let command = commands.first(where: { $0.configuration.commandName == name }) else { return }
        exec(command.handOver + arguments.dropFirst())
    }
}
