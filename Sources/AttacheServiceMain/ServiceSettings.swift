import ArgumentParser
import AttacheCommandLine
import AttacheSupport
import Configuration
import Synchronization
import SystemPackage

/// The long-running commands (serve, worker, relay): each reads its settings in `configure`, which
/// its `run` and `attache config` share.
protocol LongRunningCommand: AsyncParsableCommand {
    associatedtype Setup
    var process: ProcessOptionGroup { get }
    func configure(_ settings: Settings) throws -> Setup
}

extension LongRunningCommand {
    /// What the command runs with: its flags, then the environment, then the configuration file.
    func setUp(recording record: SettingsRecord? = nil) async throws -> Setup {
        try configure(try await .forService(configFile: process.configFile, recording: record))
    }
}

extension Settings {
    /// The long-running commands' settings: a flag wins, then the environment, then the
    /// configuration file `--config-file` or `ATTACHE_CONFIG_FILE` names (an environment file:
    /// `ATTACHE_PORT=8080` lines, as a Kubernetes Secret or a compose `env_file` holds them), then
    /// the default, all read through swift-configuration. A file that cannot be read, or that
    /// names a setting none of the long-running commands reads, stops the start with an error: a
    /// misspelt name would otherwise be silently ignored. (One file may serve them all: the worker
    /// does not refuse the service's port.)
    static func forService(configFile flag: String?, recording record: SettingsRecord? = nil) async throws -> Settings {
        let environment = ConfigReader(provider: EnvironmentVariablesProvider(secretsSpecifier: .specific(SettingsRecord.secrets)))
        let plain = Settings(ConfigurationSource(environment: environment), record: record)
        guard let path = plain.string(flag, "ATTACHE_CONFIG_FILE") else { return plain }
        let file: EnvironmentVariablesProvider
        do {
            file = try await EnvironmentVariablesProvider(environmentFilePath: FilePath(path),
                                                          secretsSpecifier: .specific(SettingsRecord.secrets))
        } catch {
            throw ValidationError("the configuration file \(path) cannot be read: \(error)")
        }
        let known = longRunningSettings
        if let unknown = try ConfigurationSource.names(inFile: path).first(where: { $0.name.hasPrefix("ATTACHE_") && !known.contains($0.name) }) {
            throw ValidationError("the configuration file \(path) names \(unknown.name) (line \(unknown.line)), which is not a setting: see docs/operations.md")
        }
        return Settings(ConfigurationSource(environment: environment, file: ConfigReader(provider: file)), record: record)
    }

    /// Every name the service, the worker, the relay and the lab read: their own readers, run against a
    /// source that answers nothing (every `ATTACHE_*` read is unconditional, so each is asked for).
    static let longRunningSettings: Set<String> = {
        let names = NameCollector()
        _ = try? ServeCommand.parse([]).configure(Settings(names))
        _ = try? WorkerCommand.parse([]).configure(Settings(names))
        _ = try? RelayCommand.parse([]).configure(Settings(names))
        _ = try? LabCommand.parse([]).configure(Settings(names))
        return names.asked.withLock { $0 }.union(["ATTACHE_CONFIG_FILE"])
    }()
}

/// A source with no values that remembers what it was asked for.
private final class NameCollector: SettingsSource {
    let asked = Mutex<Set<String>>([])

    func value(of variable: String) -> String? {
        asked.withLock { _ = $0.insert(variable) }
        return nil
    }
}

/// The `ATTACHE_*` variables through swift-configuration: the key is the variable's own name, which
/// the environment provider spells back the same way, so the environment and an environment file
/// hold the same names.
struct ConfigurationSource: SettingsSource {
    let environment: ConfigReader
    var file: ConfigReader?

    func value(of variable: String) -> String? {
        read(environment, variable) ?? file.flatMap { read($0, variable) }
    }

    func origin(of variable: String) -> SettingSource {
        read(environment, variable) != nil ? .environment : .file
    }

    private func read(_ reader: ConfigReader, _ variable: String) -> String? {
        reader.string(forKey: ConfigKey([variable]), isSecret: SettingsRecord.secrets.contains(variable)).flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The names an environment file sets (`NAME=value`, `export NAME=value`; blank lines and
    /// `#` comments skipped), only to tell a misspelt name; the values are swift-configuration's.
    static func names(inFile path: String) throws -> [(name: String, line: Int)] {
        guard let bytes = try? readFile(path) else { throw ValidationError("the configuration file \(path) cannot be read") }
        var names: [(name: String, line: Int)] = []
        for (index, line) in String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            var text = line.drop { $0 == " " || $0 == "\t" }
            if text.isEmpty || text.hasPrefix("#") { continue }
            if text.hasPrefix("export ") { text = text.dropFirst(7).drop { $0 == " " } }
            guard let equals = text.firstIndex(of: "=") else { continue }
            names.append((String(text[..<equals]).filter { $0 != " " }, index + 1))
        }
        return names
    }
}
