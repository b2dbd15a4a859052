import ArgumentParser
import Attache
import AttacheFetch

/// Where a setting comes from when no flag gives it: the process environment for the CLI; the
/// service reads the same variables through swift-configuration (see `AttacheServe`).
public protocol SettingsSource: Sendable {
    /// The value of an `ATTACHE_*` variable; nil when unset or empty.
    func value(of variable: String) -> String?
}

/// The environment as getenv sees it: no Foundation, so the CLI starts as fast as before.
public struct ProcessEnvironment: SettingsSource {
    public init() {}
    public func value(of variable: String) -> String? { environment(variable) }
}

/// A flag wins; else the variable; else the default. A value that does not parse, or is out of
/// range, is an error at start naming where it came from — never silently ignored.
public struct Settings: Sendable {
    public let source: any SettingsSource

    public init(_ source: any SettingsSource = ProcessEnvironment()) {
        self.source = source
    }

    public func string(_ flag: String?, _ variable: String) -> String? {
        flag ?? source.value(of: variable)
    }

    /// Comma-separated values of the variable after the flag's (repeatable flags add up).
    public func list(_ flag: [String], _ variable: String) -> [String] {
        flag + (source.value(of: variable)?.split(separator: ",").map { String($0.filter { $0 != " " }) }.filter { !$0.isEmpty } ?? [])
    }

    public func int(_ flag: Int?, _ variable: String, option: String, default value: Int, in range: ClosedRange<Int>) throws -> Int {
        let resolved = try flag ?? parsed(variable, as: "a whole number") { Int($0) } ?? value
        guard range.contains(resolved) else {
            throw ValidationError("\(origin(flag != nil, option, variable)) must be between \(range.lowerBound) and \(range.upperBound) (got \(resolved))")
        }
        return resolved
    }

    /// A duration (300ms, 2s); `positive` refuses zero.
    public func duration(_ flag: Duration?, _ variable: String, option: String, default value: Duration, positive: Bool = true) throws -> Duration {
        let resolved = try flag ?? parsed(variable, as: "a duration (300ms, 2s, 1.5s)") { DurationText.parse($0) } ?? value
        guard resolved > .zero || (!positive && resolved == .zero) else {
            throw ValidationError("\(origin(flag != nil, option, variable)) must be \(positive ? "positive" : "zero or more")")
        }
        return resolved
    }

    public func choice<T: RawRepresentable & CaseIterable>(_ flag: T?, _ variable: String, default value: T) throws -> T where T.RawValue == String {
        let names = T.allCases.map(\.rawValue).joined(separator: ", ")
        return try flag ?? parsed(variable, as: "one of \(names)") { T(rawValue: $0) } ?? value
    }

    /// A switch: set by the flag, or by the variable as true/false (1/0, yes/no).
    public func flag(_ set: Bool, _ variable: String) throws -> Bool {
        let values = ["true": true, "1": true, "yes": true, "false": false, "0": false, "no": false]
        return try set || parsed(variable, as: "true or false") { values[$0.lowercased()] } ?? false
    }

    public func cidrs(_ flag: [CIDR], _ variable: String) throws -> [CIDR] {
        try flag + list([], variable).map { text in
            guard let cidr = CIDR(text) else { throw ValidationError("\(variable): \"\(text)\" is not an address or CIDR") }
            return cidr
        }
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
