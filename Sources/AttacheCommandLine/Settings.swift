import ArgumentParser
import Attache
import AttacheEnrichment
import AttacheFetch
import AttacheSupport
import Synchronization

/// Where a setting comes from when no flag gives it: the process environment for the CLI; for the
/// service and the worker, the environment and then a configuration file, through
/// swift-configuration (see `AttacheServiceMain`).
public protocol SettingsSource: Sendable {
    /// The value of an `ATTACHE_*` variable; nil when unset or empty.
    func value(of variable: String) -> String?
    /// Where the value `value(of:)` gives came from.
    func origin(of variable: String) -> SettingSource
}

extension SettingsSource {
    public func origin(of variable: String) -> SettingSource { .environment }
}

/// The environment as getenv sees it: without Foundation, whose loading would slow every command's start.
public struct ProcessEnvironment: SettingsSource {
    public init() {}
    public func value(of variable: String) -> String? { environment(variable) }
}

/// Where a setting's value came from.
public enum SettingSource: String, Sendable {
    case flag, environment, file, `default`
}

/// What a command's settings resolved to, in the order they were read: what `attache config`
/// prints. Secrets are kept redacted, never in the clear.
public final class SettingsRecord: Sendable {
    public struct Entry: Sendable, Equatable {
        public let variable: String
        public let value: String
        public let source: SettingSource
    }

    /// Variables whose values are never shown.
    public static let secrets: Set<String> = [
        "ATTACHE_TOKENS", "ATTACHE_NATS_PASSWORD", "ATTACHE_NATS_TOKEN", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
    ]

    private let entries = Mutex<[Entry]>([])

    public init() {}

    /// A variable read twice (the worker's `ATTACHE_HOST`, say) keeps its first place and its
    /// last value.
    func note(_ variable: String, _ value: String, _ source: SettingSource) {
        let shown = Self.secrets.contains(variable) && source != .default ? "<redacted>" : value
        let entry = Entry(variable: variable, value: shown, source: source)
        entries.withLock { entries in
            if let i = entries.firstIndex(where: { $0.variable == variable }) { entries[i] = entry } else { entries.append(entry) }
        }
    }

    public var all: [Entry] { entries.withLock { $0 } }

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

/// Every setting's one reader. A flag wins; else the variable; else the default. A value that
/// does not parse, or is out of range, is an error at start naming where it came from — never
/// silently ignored. With a record, each value read is noted with its source.
public struct Settings: Sendable {
    public let source: any SettingsSource
    public let record: SettingsRecord?

    public init(_ source: any SettingsSource = ProcessEnvironment(), record: SettingsRecord? = nil) {
        self.source = source
        self.record = record
    }

    /// A string with no default (none when neither the flag nor the variable gives one).
    public func string(_ flag: String?, _ variable: String) -> String? {
        let value = flag ?? source.value(of: variable)
        note(variable, value ?? "", flag != nil, value != nil)
        return value
    }

    public func string(_ flag: String?, _ variable: String, default value: String) -> String {
        let given = flag ?? source.value(of: variable)
        note(variable, given ?? value, flag != nil, given != nil)
        return given ?? value
    }

    /// A variable only, never a flag (a secret: a flag would show in every process list).
    public func secret(_ variable: String) -> String? {
        string(nil, variable)
    }

    /// Comma-separated values of the variable after the flag's (repeatable flags add up).
    public func list(_ flag: [String], _ variable: String) -> [String] {
        let fromVariable = items(of: variable)
        let values = flag + fromVariable
        note(variable, values.joined(separator: ","), !flag.isEmpty, !fromVariable.isEmpty)
        return values
    }

    public func int(_ flag: Int?, _ variable: String, option: String, default value: Int, in range: ClosedRange<Int>) throws -> Int {
        let given = try givenInt(flag, variable, option: option, in: range)
        note(variable, String(given ?? value), flag != nil, given != nil)
        return given ?? value
    }

    /// An optional whole number: nil when neither the flag nor the variable gives one.
    public func int(_ flag: Int?, _ variable: String, option: String, in range: ClosedRange<Int>) throws -> Int? {
        let given = try givenInt(flag, variable, option: option, in: range)
        note(variable, given.map(String.init) ?? "", flag != nil, given != nil)
        return given
    }

    /// The flag's or the variable's whole number, refused outside `range`.
    private func givenInt(_ flag: Int?, _ variable: String, option: String, in range: ClosedRange<Int>) throws -> Int? {
        let given = try flag ?? parsed(variable, as: "a whole number") { Int($0) }
        if let given, !range.contains(given) {
            throw ValidationError("\(origin(flag != nil, option, variable)) must be between \(range.lowerBound) and \(range.upperBound) (got \(given))")
        }
        return given
    }

    /// A duration (300ms, 2s); `positive` refuses zero.
    public func duration(_ flag: Duration?, _ variable: String, option: String, default value: Duration, positive: Bool = true) throws -> Duration {
        var given = flag
        if given == nil, let raw = source.value(of: variable) {
            guard let d = DurationText.parse(raw) else { throw ValidationError("\(variable)=\"\(raw)\" \(DurationText.hint(raw))") }
            given = d
        }
        let resolved = given ?? value
        guard resolved > .zero || (!positive && resolved == .zero) else {
            throw ValidationError("\(origin(flag != nil, option, variable)) must be \(positive ? "positive" : "zero or more")")
        }
        note(variable, DurationText.format(resolved), flag != nil, given != nil)
        return resolved
    }

    public func choice<T: RawRepresentable & CaseIterable>(_ flag: T?, _ variable: String, default value: T) throws -> T where T.RawValue == String {
        let names = T.allCases.map(\.rawValue).joined(separator: ", ")
        let given = try flag ?? parsed(variable, as: "one of \(names)") { T(rawValue: $0) }
        note(variable, (given ?? value).rawValue, flag != nil, given != nil)
        return given ?? value
    }

    /// A switch: set by the flag, or by the variable as true/false (1/0, yes/no).
    public func flag(_ set: Bool, _ variable: String) throws -> Bool {
        let values = ["true": true, "1": true, "yes": true, "false": false, "0": false, "no": false]
        let given = try parsed(variable, as: "true or false") { values[$0.lowercased()] }
        let resolved = set || given ?? false
        note(variable, String(resolved), set, given != nil)
        return resolved
    }

    public func cidrs(_ flag: [CIDR], _ variable: String) throws -> [CIDR] {
        let parsed = try items(of: variable).map { text in
            guard let cidr = CIDR(text) else { throw ValidationError("\(variable): \"\(text)\" is not an address or CIDR") }
            return cidr
        }
        note(variable, (flag + parsed).map(\.description).joined(separator: ","), !flag.isEmpty, !parsed.isEmpty)
        return flag + parsed
    }

    /// Notes a value read outside these readers (the AWS variables a bucket store reads).
    public func noteRead(_ variable: String, _ value: String?) {
        note(variable, value ?? "", false, value != nil)
    }

    /// A variable's comma-separated values, blanks dropped.
    private func items(of variable: String) -> [String] {
        source.value(of: variable)?.split(separator: ",").map { String($0.filter { $0 != " " }) }.filter { !$0.isEmpty } ?? []
    }

    private func note(_ variable: String, _ value: String, _ fromFlag: Bool, _ given: Bool) {
        record?.note(variable, value, fromFlag ? .flag : given ? source.origin(of: variable) : .default)
    }

    private func parsed<T>(_ variable: String, as what: String, _ parse: (String) -> T?) throws -> T? {
        guard let raw = source.value(of: variable) else { return nil }
        guard let value = parse(raw) else { throw ValidationError("\(variable)=\"\(raw)\" is not \(what)") }
        return value
    }

    private func origin(_ fromFlag: Bool, _ option: String, _ variable: String) -> String {
        fromFlag ? option : variable
    }
}
