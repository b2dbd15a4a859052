import ArgumentParser
import AttacheCommandLine
import AttacheSupport
import Configuration
import Synchronization
import SystemPackage

extension Settings {
    /// The service's and the worker's settings: a flag wins, then the environment, then the
    /// configuration file `--config-file` or `ATTACHE_CONFIG_FILE` names (an environment file:
    /// `ATTACHE_PORT=8080` lines, as a Kubernetes Secret or a compose `env_file` holds them), then
    /// the default, all read through swift-configuration. A file that cannot be read, or that
    /// names a setting neither command reads (`checkConfigurationFile`), stops the start with an error.
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
        let names = try ConfigurationSource.names(inFile: path)
        return Settings(ConfigurationSource(environment: environment, file: ConfigReader(provider: file), fileNames: names, path: path),
                        record: record)
    }

    /// A name in the configuration file that none of the long-running commands (service, worker,
    /// relay) reads is a mistake: a misspelt setting would otherwise be silently ignored. (One file
    /// may serve them all: the worker does not refuse the service's port.)
    func checkConfigurationFile() throws {
        guard let source = source as? ConfigurationSource, source.file != nil else { return }
        let known = Self.longRunningSettings
        guard let unknown = source.fileNames.first(where: { $0.name.hasPrefix("ATTACHE_") && !known.contains($0.name) }) else { return }
        throw ValidationError("the configuration file \(source.path ?? "") names \(unknown.name) (line \(unknown.line)), which is not a setting: see docs/operations.md")
    }

    /// Every name the service, the worker and the relay read: their own readers, run against a source that
    /// answers nothing (every `ATTACHE_*` read is unconditional, so each is asked for).
    static let longRunningSettings: Set<String> = {
        let names = NameCollector()
        _ = try? Serve.parse([]).configure(Settings(names))
        _ = try? Worker.parse([]).configure(Settings(names))
        _ = try? Relay.parse([]).configure(Settings(names))
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
    let file: ConfigReader?
    /// The names the file sets, with their lines.
    let fileNames: [(name: String, line: Int)]
    let path: String?

    init(environment: ConfigReader, file: ConfigReader? = nil, fileNames: [(name: String, line: Int)] = [], path: String? = nil) {
        self.environment = environment
        self.file = file
        self.fileNames = fileNames
        self.path = path
    }

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
