/// The hosts a fetch may go to, by name: exact names (`cdn.example.com`, or an address literal
/// such as `203.0.113.7`) and `*.example.com`, which matches every name below `example.com` (not
/// `example.com` itself). Checked on the first URL and on every redirect, before curl connects;
/// the address policy still judges every connection underneath (an allowed name that resolves to a
/// private address is still refused).
public struct HostAllowlist: Sendable, Hashable, CustomStringConvertible {
    public let patterns: [String]
    private let exact: Set<String>
    /// `.example.com` for `*.example.com`.
    private let suffixes: [String]

    /// Throws `HostAllowlist.Invalid` naming the first pattern that is not a host name, an address
    /// literal or `*.` and a name.
    public init(_ patterns: [String]) throws(Invalid) {
        var exact = Set<String>(), suffixes: [String] = []
        for pattern in patterns {
            let lower = Self.normalized(pattern)
            if lower.hasPrefix("*.") {
                let name = String(lower.dropFirst(2))
                guard Self.isHostName(name), name.contains(".") else {
                    throw Invalid(pattern: pattern, why: "a wildcard is *. followed by a domain with a dot in it (*.example.com)")
                }
                suffixes.append("." + name)
            } else if IPAddress(Self.unbracketed(lower)) != nil {
                exact.insert(Self.unbracketed(lower))
            } else {
                guard Self.isHostName(lower) else {
                    throw Invalid(pattern: pattern, why: "not a host name, an address or *.domain")
                }
                exact.insert(lower)
            }
        }
        self.patterns = patterns
        self.exact = exact
        self.suffixes = suffixes
    }

    public struct Invalid: Error, Sendable, CustomStringConvertible {
        public let pattern: String
        public let why: String
        public var description: String { "\"\(pattern)\": \(why)" }
    }

    /// Whether a URL's host (as curl parsed it: lower case, IPv6 in brackets) is allowed.
    public func allows(host: String) -> Bool {
        let name = Self.unbracketed(Self.normalized(host))
        if exact.contains(name) { return true }
        // Address literals match only exactly: *.example.com says nothing of 10.0.0.1.
        guard IPAddress(name) == nil else { return false }
        return suffixes.contains { name.hasSuffix($0) }
    }

    public var description: String { patterns.joined(separator: ", ") }

    static func normalized(_ host: String) -> String {
        let lower = host.lowercased()
        return lower.hasSuffix(".") ? String(lower.dropLast()) : lower
    }

    static func unbracketed(_ host: String) -> String {
        host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
    }

    /// Letters, digits and hyphens in dot-separated labels of 1–63 characters, none starting or
    /// ending with a hyphen; 253 characters at most.
    static func isHostName(_ name: String) -> Bool {
        guard !name.isEmpty, name.utf8.count <= 253 else { return false }
        return name.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { label in
            !label.isEmpty && label.utf8.count <= 63 && label.first != "-" && label.last != "-"
                && label.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7a) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2d }
        }
    }
}
