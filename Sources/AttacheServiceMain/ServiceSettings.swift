import ArgumentParser
import AttacheCommandLine
import AttacheSupport
import Configuration

/// The long-running commands (serve, worker, relay, lab): each names its flags and reads its
/// part of the configuration tree in `configure`, which its `run` and `attache config` share.
protocol LongRunningCommand: AsyncParsableCommand {
    associatedtype Setup
    var process: ProcessOptionGroup { get }
    /// Every flag the command was given, as the reader's first provider.
    var flags: Flags { get }
    func configure(_ settings: Settings) throws -> Setup
}

extension LongRunningCommand {
    /// The reader of the command's settings: its flags, then the environment, then the
    /// configuration file.
    func settings() throws -> Settings {
        try Settings.forService(flags: flags)
    }

    /// What the command runs with.
    func setUp() throws -> Setup {
        let settings = try settings()
        return try settings.read(configure)
    }
}

extension Settings {
    /// The long-running commands' settings: a flag wins, then the environment, then the
    /// configuration file `--config-file` or `ATTACHE_CONFIG_FILE` names (an environment file:
    /// `ATTACHE_PORT=8080` lines, as a Kubernetes Secret or a compose `env_file` holds them), then
    /// the default. A file that cannot be read, or that names a setting none of the long-running
    /// commands reads, stops the start with an error: a misspelt name would otherwise be silently
    /// ignored. (One file may serve them all: the worker does not refuse the service's port.)
    static func forService(flags: Flags, environment: (any ConfigProvider)? = nil) throws -> Settings {
        // The process's environment is read once, for both readers.
        let environment = environment ?? Settings.processEnvironment
        let plain = Settings(flags: flags, environment: environment)
        guard let path = plain.attache.text(.configFile) else { return plain }
        let file = try ConfigurationFile(path: path)
        let known = longRunningSettings
        if let unknown = file.lines.first(where: { $0.name.hasPrefix("ATTACHE_") && !known.contains($0.name) }) {
            throw ValidationError("the configuration file \(path) names \(unknown.name) (line \(unknown.line)), which is not a setting: see docs/operations.md")
        }
        let settings = Settings(flags: flags, environment: environment, file: file.values)
        _ = settings.attache.text(.configFile)  // listed first, as the plain reader read it
        return settings
    }

    /// Every name the service, the worker, the relay and the lab read: their own readers, run
    /// against an environment that gives nothing (every read is unconditional, so each is asked for).
    static let longRunningSettings: Set<String> = {
        let names = Settings(environment: InMemoryProvider(values: [:]))
        _ = try? ServeCommand.parse([]).configure(names)
        _ = try? WorkerCommand.parse([]).configure(names)
        _ = try? RelayCommand.parse([]).configure(names)
        _ = try? LabCommand.parse([]).configure(names)
        return Set(names.record.all.map(\.variable)).union([SettingKey.configFile.variable])
    }()
}

/// A configuration file: `NAME=value` lines (`export NAME=value` too; blank lines and `#`
/// comments skipped; spaces around the name and the value dropped), read once for both the
/// values and the line each name is on.
struct ConfigurationFile {
    let lines: [(name: String, value: String, line: Int)]

    init(path: String) throws {
        guard let bytes = try? readFile(path) else { throw ValidationError("the configuration file \(path) cannot be read") }
        var lines: [(name: String, value: String, line: Int)] = []
        for (index, line) in String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            var text = line.drop { $0 == " " || $0 == "\t" }
            if text.isEmpty || text.hasPrefix("#") { continue }
            if text.hasPrefix("export ") { text = text.dropFirst(7).drop { $0 == " " } }
            guard let equals = text.firstIndex(of: "=") else { continue }
            let name = String(text[..<equals]).filter { $0 != " " && $0 != "\t" }
            let value = text[text.index(after: equals)...].drop { $0 == " " || $0 == "\t" }
            lines.append((name, String(value.reversed().drop { $0 == " " || $0 == "\t" || $0 == "\r" }.reversed()), index + 1))
        }
        self.lines = lines
    }

    /// The last value of each name.
    var values: [String: String] {
        Dictionary(lines.map { ($0.name, $0.value) }, uniquingKeysWith: { _, last in last })
    }
}
