import ArgumentParser
import AttacheCommandLine
import AttacheSupport
#if canImport(Glibc)
import Glibc
#endif

/// `attache serve` is the `attache-serve` executable, installed beside `attache` and run in its
/// place (same process id, so signals and exit codes are the service's own). The service links
/// Hummingbird and, through it, Foundation and ICU; kept out of `attache`, they no longer cost
/// every other command ~6 ms and ~8 MB at start.
struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the enrichment service that push pipelines call per message.",
        discussion: "Runs attache-serve from the directory of attache (else from PATH); `attache serve --help` lists its options."
    )

    @Argument(parsing: .captureForPassthrough, help: "Options of the service.")
    var arguments: [String] = []

    func run() throws {
        ServerLauncher.exec(arguments)
    }
}

enum ServerLauncher {
    static let name = "attache-serve"

    /// Replaces this process with the service; returns only by exiting with an error.
    static func exec(_ arguments: [String]) -> Never {
        let argv = ([name] + arguments).map { strdup($0) } + [nil]
        if let beside = pathBesideThisExecutable(name) {
            execv(beside, argv)
        }
        execvp(name, argv)
        printError("attache: cannot run \(name) (looked beside attache and in PATH): \(String(cString: strerror(errno)))")
        exit(1)
    }
}

/// `attache worker` is attache-serve's worker: see `Serve` for why it is another executable.
struct Worker: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "worker",
        abstract: "Take payloads off a NATS JetStream stream and publish one enriched payload per payload.",
        discussion: "Runs `attache-serve worker` from the directory of attache (else from PATH); `attache worker --help` lists its options."
    )

    @Argument(parsing: .captureForPassthrough, help: "Options of the worker.")
    var arguments: [String] = []

    func run() throws {
        ServerLauncher.exec(["worker"] + arguments)
    }
}

/// `attache config` is attache-serve's: it reads the settings with the service's and the worker's
/// own code, which lives there.
struct Config: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Print the settings a command would run with, each with its value and its source.",
        discussion: "Runs `attache-serve config` from the directory of attache (else from PATH); `attache config --help` explains it."
    )

    @Argument(parsing: .captureForPassthrough, help: "serve, worker or enrich, and that command's flags.")
    var arguments: [String] = []

    func run() throws {
        ServerLauncher.exec(["config"] + arguments)
    }
}
