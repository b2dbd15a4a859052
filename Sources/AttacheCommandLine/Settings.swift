import ArgumentParser
import AttacheFetch
import AttacheSupport
import Configuration
import Synchronization

/// A setting: one key of the configuration tree under `attache`. Its name is spelt once, where it
/// is declared (`SettingKeys.swift`); the variable (`cache-ttl`: ATTACHE_CACHE_TTL) and the flag
/// (--cache-ttl) follow from it, as swift-configuration's environment provider spells a key.
public struct SettingKey: Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    public let name: String

    public init(stringLiteral name: String) {
        self.name = name
    }

    /// The key as the tree's readers, scoped to `attache`, ask for it.
    public var key: ConfigKey { ConfigKey([name]) }
    public var variable: String { variableName(["attache", name]) }
    public var option: String { "--" + name }
    public var description: String { name }
}

/// A key's variable, as swift-configuration's environment provider spells it: the components in
/// capitals, joined by `_`, with every other character a `_`.
func variableName(_ components: [String]) -> String {
    components.map { String($0.uppercased().map { $0.isLetter || $0.isNumber ? $0 : "_" }) }.joined(separator: "_")
}

/// Where a setting's value came from.
public enum SettingSource: String, Sendable {
    case flag, environment, file, `default`
}

/// The flags a command was given: the first provider of its reader. Each option group adds its
/// own (`FlagGroup`); a flag not given adds nothing, so the environment is read next.
public struct Flags: Sendable {
    var values: [AbsoluteConfigKey: ConfigValue] = [:]

    public init() {}

    public mutating func set(_ key: SettingKey, _ value: String?) {
        guard let value else { return }
        values[AbsoluteConfigKey(["attache", key.name])] = ConfigValue(.string(value), isSecret: false)
    }

    public mutating func set(_ key: SettingKey, _ value: Int?) { set(key, value.map(String.init)) }
    public mutating func set(_ key: SettingKey, _ value: Duration?) { set(key, value.map(DurationText.format)) }
    public mutating func set<T: RawRepresentable>(_ key: SettingKey, _ value: T?) where T.RawValue == String { set(key, value?.rawValue) }
    /// A repeatable flag: given at all, its values replace the variable's.
    public mutating func set(_ key: SettingKey, _ values: [String]) { set(key, values.isEmpty ? nil : values.joined(separator: ",")) }
    public mutating func set(_ key: SettingKey, _ values: [CIDR]) { set(key, values.map(\.description)) }
    /// A switch: set, it is true; not set, the variable decides.
    public mutating func set(_ key: SettingKey, _ on: Bool) { set(key, on ? "true" : nil) }
}

/// An option group that feeds its flags to the reader.
public protocol FlagGroup {
    func flags(into flags: inout Flags)
}

extension FlagGroup {
    public var flags: Flags {
        var flags = Flags()
        self.flags(into: &flags)
        return flags
    }
}

extension Flags {
    /// The flags of several groups (a command's own and its option groups').
    public init(_ groups: [any FlagGroup], own: (inout Flags) -> Void = { _ in }) {
        self.init()
        for group in groups { group.flags(into: &self) }
        own(&self)
    }
}

/// Every setting's one reader: swift-configuration's `ConfigReader` over the flags, then the
/// environment, then (for the long-running commands) a configuration file; a setting none of
/// them gives takes the default its reader names. The configuration tree's parts each read
/// their keys in an `init(reader:)` on the reader scoped to `attache`; the AWS variables a
/// bucket store reads are the same reader scoped to `aws`. Every value read is noted in the
/// record, with its source: what `attache config` prints, and what a bad value's error names.
public struct Settings: Sendable {
    public let root: ConfigReader
    public let record: SettingsRecord

    /// The process environment, as swift-configuration reads it.
    public static var processEnvironment: any ConfigProvider {
        EnvironmentVariablesProvider(secretsSpecifier: .specific(SettingsRecord.secrets))
    }

    /// `environment` stands for the process's (tests give their own); `file` holds the
    /// configuration file's values by variable name (`ConfigurationFile`).
    public init(flags: Flags = Flags(), environment: (any ConfigProvider)? = nil, file: [String: String]? = nil) {
        var providers: [any ConfigProvider] = [InMemoryProvider(name: "flag", values: flags.values), environment ?? Self.processEnvironment]
        var sources: [SettingSource] = [.flag, .environment]
        if let file {
            providers.append(Self.provider(named: "file", variables: file))
            sources.append(.file)
        }
        record = SettingsRecord(sources: sources)
        root = ConfigReader(providers: providers, accessReporter: record)
        self.providers = providers
    }

    private let providers: [any ConfigProvider]

    /// Whether anything gives a setting the command does not read (the lab warns of the store's):
    /// asked of the providers without a note in the record.
    public func isGiven(_ key: SettingKey) -> Bool {
        ConfigReader(providers: providers).scoped(to: "attache").text(key) != nil
    }

    /// Attache's own settings.
    public var attache: ConfigReader { root.scoped(to: "attache") }

    /// The standard AWS variables (AWS_REGION is `region` here).
    public var aws: ConfigReader { root.scoped(to: "aws") }

    /// Reads with `body`; a value that does not parse, or is out of range, becomes the error a user
    /// sees, naming the flag or the variable it came from.
    public func read<T>(_ body: (Settings) throws -> T) throws -> T {
        do {
            return try body(self)
        } catch let error as SettingError {
            throw ValidationError(error.message(from: record.source(of: error.key.variable) ?? .environment))
        }
    }
}

extension Settings {
    /// Values given by variable name (a configuration file's, a test's environment) as a provider:
    /// `ATTACHE_CACHE_TTL` is the key `attache.cache-ttl`, `AWS_REGION` is `aws.region`, the keys
    /// the environment provider spells so. Other names are not settings and are left out.
    public static func provider(named name: String, variables: [String: String]) -> InMemoryProvider {
        var values: [AbsoluteConfigKey: ConfigValue] = [:]
        for (variable, value) in variables {
            guard let scope = ["ATTACHE_", "AWS_"].first(where: variable.hasPrefix) else { continue }
            let key = AbsoluteConfigKey([scope.dropLast().lowercased(), variable.dropFirst(scope.count).lowercased().replacing("_", with: "-")])
            values[key] = ConfigValue(.string(value), isSecret: SettingsRecord.secrets.contains(variable))
        }
        return InMemoryProvider(name: name, values: values)
    }
}

/// What a command's settings resolved to, in the order they were read: what `attache config`
/// prints. Fed by the reader's access events; secrets are kept redacted, never in the clear.
public final class SettingsRecord: AccessReporter, Sendable {
    public struct Entry: Sendable, Equatable {
        public let variable: String
        public let value: String
        public let source: SettingSource
    }

    /// Variables whose values are never shown.
    public static let secrets: Set<String> = [
        "ATTACHE_TOKENS", "ATTACHE_NATS_PASSWORD", "ATTACHE_NATS_TOKEN", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
    ]

    /// The reader's providers in order: the source of each.
    private let sources: [SettingSource]
    private let entries = Mutex<[Entry]>([])

    init(sources: [SettingSource]) {
        self.sources = sources
    }

    /// A setting read twice (the worker's `ATTACHE_HOST`, say) keeps its first place and its last
    /// value.
    public func report(_ event: AccessEvent) {
        let variable = variableName(event.metadata.key.components)
        var source = SettingSource.default
        for (index, provider) in event.providerResults.enumerated() where index < sources.count {
            if case .success(let lookup) = provider.result, lookup.value != nil {
                source = sources[index]
                break
            }
        }
        let value: String
        switch event.result {
        case .success(let resolved?):
            if case .string(let text) = resolved.content { value = text } else { value = "\(resolved.content)" }
        default: value = ""
        }
        let shown = (Self.secrets.contains(variable) || (try? event.result.get())??.isSecret == true) && source != .default && !value.isEmpty
            ? "<redacted>" : value
        let entry = Entry(variable: variable, value: shown, source: source)
        entries.withLock { entries in
            if let i = entries.firstIndex(where: { $0.variable == variable }) { entries[i] = entry } else { entries.append(entry) }
        }
    }

    public var all: [Entry] { entries.withLock { $0 } }

    /// Where a variable's value came from; nil when it was not read.
    public func source(of variable: String) -> SettingSource? {
        entries.withLock { $0.first { $0.variable == variable }?.source }
    }

    /// One line per setting: the variable, its value, its source, in columns.
    public func table() -> String {
        let rows = [("setting", "value", "source")] + all.map { ($0.variable, $0.value.isEmpty ? "(none)" : $0.value, $0.source.rawValue) }
        let first = rows.map(\.0.count).max() ?? 0, second = max(rows.map(\.1.count).max() ?? 0, 5)
        return rows.map { row in
            row.0.padding(to: first + 2) + row.1.padding(to: second + 2) + row.2
        }.joined(separator: "\n")
    }
}

extension String {
    fileprivate func padding(to width: Int) -> String {
        count >= width ? self + " " : self + String(repeating: " ", count: width - count)
    }
}

/// A setting's value that does not parse or is out of range. The message names the flag or the
/// variable the value came from, which `Settings.read` knows from the record.
public struct SettingError: Error, Sendable {
    public enum Problem: Sendable {
        /// The text is not what the setting takes ("a whole number", "one of text, json").
        case notA(String, raw: String)
        /// Said after the name (`must be positive`).
        case message(String)
        /// Said after the name and its text (`has no unit: …`).
        case text(String, raw: String)
        /// About one item of a list.
        case item(String, raw: String)
    }

    public let key: SettingKey
    public let problem: Problem

    public init(_ key: SettingKey, _ problem: Problem) {
        self.key = key
        self.problem = problem
    }

    func message(from source: SettingSource) -> String {
        let name = source == .flag ? key.option : key.variable
        switch problem {
        case .notA(let what, let raw): return source == .flag ? "\(name) \"\(raw)\" is not \(what)" : "\(name)=\"\(raw)\" is not \(what)"
        case .message(let message): return "\(name) \(message)"
        case .text(let message, let raw): return source == .flag ? "\(name) \(raw) \(message)" : "\(name)=\"\(raw)\" \(message)"
        case .item(let message, let raw): return "\(name): \"\(raw)\" \(message)"
        }
    }
}

/// The typed reads of the configuration tree's parts, each on the reader scoped to `attache`.
/// A value given empty counts as not given.
extension ConfigReader {
    /// Text with no default: nil when nothing gives one.
    public func text(_ key: SettingKey, secret: Bool = false) -> String? {
        string(forKey: key.key, isSecret: secret || SettingsRecord.secrets.contains(key.variable)).flatMap { $0.isEmpty ? nil : $0 }
    }

    public func text(_ key: SettingKey, default value: String) -> String {
        let given = string(forKey: key.key, default: value)
        return given.isEmpty ? value : given
    }

    /// Comma-separated values, blanks dropped.
    public func list(_ key: SettingKey) -> [String] {
        text(key)?.split(separator: ",").map { String($0.filter { $0 != " " }) }.filter { !$0.isEmpty } ?? []
    }

    public func int(_ key: SettingKey, default value: Int, in range: ClosedRange<Int>) throws -> Int {
        try checked(key, Self.wholeNumber(key, string(forKey: key.key, default: String(value))) ?? value, in: range)
    }

    /// A whole number with no default: nil when nothing gives one.
    public func int(_ key: SettingKey, in range: ClosedRange<Int>) throws -> Int? {
        try Self.wholeNumber(key, text(key)).map { try checked(key, $0, in: range) }
    }

    /// A duration (300ms, 2s); `positive` refuses zero.
    public func duration(_ key: SettingKey, default value: Duration, positive: Bool = true) throws -> Duration {
        let raw = string(forKey: key.key, default: DurationText.format(value))
        var resolved = value
        if !raw.isEmpty {
            guard let parsed = DurationText.parse(raw) else { throw SettingError(key, .text(DurationText.hint(raw), raw: raw)) }
            resolved = parsed
        }
        guard resolved > .zero || (!positive && resolved == .zero) else {
            throw SettingError(key, .message("must be \(positive ? "positive" : "zero or more")"))
        }
        return resolved
    }

    public func choice<T: RawRepresentable & CaseIterable>(_ key: SettingKey, default value: T) throws -> T where T.RawValue == String {
        let raw = string(forKey: key.key, default: value.rawValue)
        if raw.isEmpty { return value }
        guard let chosen = T(rawValue: raw) else {
            throw SettingError(key, .notA("one of \(T.allCases.map(\.rawValue).joined(separator: ", "))", raw: raw))
        }
        return chosen
    }

    /// A switch: true/false (1/0, yes/no); off unless given.
    public func flag(_ key: SettingKey) throws -> Bool {
        let values = ["true": true, "1": true, "yes": true, "false": false, "0": false, "no": false]
        let raw = string(forKey: key.key, default: "false")
        if raw.isEmpty { return false }
        guard let on = values[raw.lowercased()] else { throw SettingError(key, .notA("true or false", raw: raw)) }
        return on
    }

    public func cidrs(_ key: SettingKey) throws -> [CIDR] {
        try list(key).map { text in
            guard let cidr = CIDR(text) else { throw SettingError(key, .item("is not an address or CIDR", raw: text)) }
            return cidr
        }
    }

    private static func wholeNumber(_ key: SettingKey, _ raw: String?) throws -> Int? {
        guard let raw, !raw.isEmpty else { return nil }
        guard let value = Int(raw) else { throw SettingError(key, .notA("a whole number", raw: raw)) }
        return value
    }

    private func checked(_ key: SettingKey, _ value: Int, in range: ClosedRange<Int>) throws -> Int {
        guard range.contains(value) else {
            throw SettingError(key, .message("must be between \(range.lowerBound) and \(range.upperBound) (got \(value))"))
        }
        return value
    }
}
