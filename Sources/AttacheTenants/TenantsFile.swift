import Attache
import AttacheEnrichment
import AttacheFetch
import AttacheMedia
import AttacheSupport
import Yams

/// The tenants file, YAML or JSON (JSON is read as the YAML it also is):
///
/// ```yaml
/// tenants:
///   acme:
///     tokens: ["sha256:…"]            # required: `attache tenants token` makes one
///     hosts: ["cdn.acme.example", "*.acme-media.example"]
///     store-prefix: acme/             # default: the tenant's name and /
///     public-base-url: https://media.acme.example
///     max-deadline: 2s
///     max-pixels: 40000000
///     max-image-bytes: 10MB           # also max-movie-bytes, max-sound-bytes
///     rate: {per-second: 50, burst: 100}
///     concurrency: 16
///     daily-download-bytes: 10GB
///     cache-group: brands             # tenants of one group share cached results
///     apps: [com.acme.app, acme-prod] # the relay: APNs topics and FCM project ids
/// ```
///
/// Everything is checked before anything is used: an unknown key, a duplicate token, an invalid
/// host pattern, two tenants on one store prefix without a shared cache group — each is refused
/// with its line and key.
public enum TenantsFile {
    public static let tenantKeys = [
        "tokens", "hosts", "store-prefix", "public-base-url", "max-deadline", "max-pixels", "max-image-bytes",
        "max-movie-bytes", "max-sound-bytes", "rate", "concurrency", "daily-download-bytes", "cache-group", "apps",
    ]

    public static func parse(_ text: String) throws(TenantsFileError) -> [Tenant] {
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch let error as YamlError {
            throw Self.error(error)
        } catch {
            throw TenantsFileError(line: 0, key: "", message: "\(error)")
        }
        guard let root, case .mapping(let top) = root else {
            throw TenantsFileError(line: root?.mark?.line ?? 1, key: "", message: "the file is a mapping with the key tenants")
        }
        try unknownKeys(top, known: ["tenants"], path: "")
        guard let tenantsNode = value(top, "tenants") else {
            throw TenantsFileError(line: 1, key: "tenants", message: "missing")
        }
        guard case .mapping(let entries) = tenantsNode else {
            throw TenantsFileError(line: line(tenantsNode), key: "tenants", message: "a mapping of tenant names to their settings")
        }
        // With a tenants file every request names a tenant: none would refuse them all (401).
        guard !entries.isEmpty else {
            throw TenantsFileError(line: line(tenantsNode), key: "tenants", message: "no tenants: every request would be refused; name at least one")
        }
        var tenants: [Tenant] = []
        var tokenOwners: [[UInt8]: String] = [:]
        var prefixes: [String: Tenant] = [:]
        var appOwners: [String: String] = [:]
        for (keyNode, settings) in entries {
            guard let name = keyNode.scalar?.string, isName(name) else {
                throw TenantsFileError(line: line(keyNode), key: "tenants.\(keyNode.scalar?.string ?? "?")",
                                       message: "a tenant's name is lower-case letters, digits and - (it labels metrics)")
            }
            if tenants.contains(where: { $0.name == name }) {
                throw TenantsFileError(line: line(keyNode), key: "tenants.\(name)", message: "a second tenant of this name")
            }
            let tenant = try parseTenant(name, settings)
            for (hash, node) in zip(tenant.tokenHashes, tokenNodes(settings)) {
                if let owner = tokenOwners[hash] {
                    throw TenantsFileError(line: line(node), key: "tenants.\(name).tokens",
                                           message: owner == name ? "the same token twice" : "a token of tenant \(owner) too")
                }
                tokenOwners[hash] = name
            }
            if let other = prefixes[tenant.storePrefix], other.cacheGroup == nil || other.cacheGroup != tenant.cacheGroup {
                throw TenantsFileError(line: line(value(mapping(settings)!, "store-prefix") ?? keyNode), key: "tenants.\(name).store-prefix",
                                       message: "\"\(tenant.storePrefix)\" is tenant \(other.name)'s too: give both one cache-group to share media, or each its own prefix")
            }
            prefixes[tenant.storePrefix] = tenant
            for app in tenant.apps {
                if let owner = appOwners[app] {
                    throw TenantsFileError(line: line(value(mapping(settings)!, "apps") ?? keyNode), key: "tenants.\(name).apps",
                                           message: "\(app) is tenant \(owner)'s too: a relayed request must belong to one tenant")
                }
                appOwners[app] = name
            }
            tenants.append(tenant)
        }
        return tenants
    }

    private static func parseTenant(_ name: String, _ node: Node) throws(TenantsFileError) -> Tenant {
        let path = "tenants.\(name)"
        guard let settings = mapping(node) else {
            throw TenantsFileError(line: line(node), key: path, message: "a mapping of settings")
        }
        try unknownKeys(settings, known: tenantKeys, path: path)
        // Tokens: at least one, each sha256:<64 hex>.
        guard let tokensNode = value(settings, "tokens") else {
            throw TenantsFileError(line: line(node), key: "\(path).tokens", message: "missing: every tenant has at least one token")
        }
        guard case .sequence(let tokenList) = tokensNode, !tokenList.isEmpty else {
            throw TenantsFileError(line: line(tokensNode), key: "\(path).tokens", message: "a list of sha256:… hashes, at least one")
        }
        var hashes: [[UInt8]] = []
        for item in tokenList {
            guard let text = item.scalar?.string, let digest = TenantToken.digest(text) else {
                throw TenantsFileError(line: line(item), key: "\(path).tokens",
                                       message: "not sha256: and 64 hex digits (the file keeps hashes, never tokens: attache tenants token makes both)")
            }
            hashes.append(digest)
        }
        var tenant = Tenant(name: name, tokenHashes: hashes)
        if let hostsNode = value(settings, "hosts") {
            let patterns = try strings(hostsNode, "\(path).hosts")
            do throws(HostAllowlist.Invalid) {
                tenant.hosts = try HostAllowlist(patterns)
            } catch {
                let at = sequenceItems(hostsNode).first { $0.scalar?.string == error.pattern }
                throw TenantsFileError(line: line(at ?? hostsNode), key: "\(path).hosts", message: error.description)
            }
        }
        if let n = value(settings, "store-prefix") {
            let prefix = try string(n, "\(path).store-prefix")
            guard prefix.isEmpty || isPrefix(prefix) else {
                throw TenantsFileError(line: line(n), key: "\(path).store-prefix",
                                       message: "segments of letters, digits, ., _ and -, ending in / (acme/ or brands/acme/), or empty")
            }
            tenant.storePrefix = prefix
        }
        if let n = value(settings, "public-base-url") {
            let url = try string(n, "\(path).public-base-url")
            guard url.hasPrefix("https://") || url.hasPrefix("http://") else {
                throw TenantsFileError(line: line(n), key: "\(path).public-base-url", message: "an http:// or https:// URL")
            }
            tenant.publicBaseURL = url
        }
        if let n = value(settings, "max-deadline") {
            let text = try string(n, "\(path).max-deadline")
            guard let d = DurationText.parse(text), d > .zero else {
                throw TenantsFileError(line: line(n), key: "\(path).max-deadline",
                                       message: DurationText.parse(text) == nil ? DurationText.problem(text) : "a duration above zero: 300ms, 2s, 1.5s")
            }
            tenant.maxBudget = d
        }
        var limits = MediaLimits(), capped = false
        if let n = value(settings, "max-pixels") { limits.maxPixels = try count(n, "\(path).max-pixels"); capped = true }
        if let n = value(settings, "max-image-bytes") { limits.imageBytes = try bytes(n, "\(path).max-image-bytes"); capped = true }
        if let n = value(settings, "max-movie-bytes") { limits.videoBytes = try bytes(n, "\(path).max-movie-bytes"); capped = true }
        if let n = value(settings, "max-sound-bytes") { limits.audioBytes = try bytes(n, "\(path).max-sound-bytes"); capped = true }
        if capped { tenant.limits = limits }
        if let n = value(settings, "rate") {
            guard let rate = mapping(n) else {
                throw TenantsFileError(line: line(n), key: "\(path).rate", message: "{per-second: N, burst: N}")
            }
            try unknownKeys(rate, known: ["per-second", "burst"], path: "\(path).rate")
            guard let perSecondNode = value(rate, "per-second"), let perSecond = perSecondNode.scalar.flatMap({ Double($0.string) }),
                  perSecond > 0, perSecond.isFinite else {
                throw TenantsFileError(line: line(n), key: "\(path).rate.per-second", message: "a number of requests per second above 0")
            }
            let burst = try value(rate, "burst").map { n throws(TenantsFileError) in try count(n, "\(path).rate.burst") } ?? max(1, Int(perSecond.rounded(.up)))
            tenant.rate = .init(perSecond: perSecond, burst: burst)
        }
        if let n = value(settings, "concurrency") { tenant.concurrency = try count(n, "\(path).concurrency") }
        if let n = value(settings, "daily-download-bytes") { tenant.dailyDownloadBytes = try bytes(n, "\(path).daily-download-bytes") }
        if let n = value(settings, "cache-group") {
            let group = try string(n, "\(path).cache-group")
            guard isName(group) else {
                throw TenantsFileError(line: line(n), key: "\(path).cache-group", message: "lower-case letters, digits and -")
            }
            tenant.cacheGroup = group
        }
        if let n = value(settings, "apps") { tenant.apps = try strings(n, "\(path).apps") }
        return tenant
    }

    // MARK: reading nodes, with the line of what was wrong

    private static func line(_ node: Node) -> Int { node.mark?.line ?? 0 }

    private static func mapping(_ node: Node) -> Node.Mapping? {
        if case .mapping(let m) = node { return m }
        return nil
    }

    private static func value(_ mapping: Node.Mapping, _ key: String) -> Node? {
        mapping.first { $0.key.scalar?.string == key }?.value
    }

    private static func sequenceItems(_ node: Node) -> [Node] {
        if case .sequence(let s) = node { return Array(s) }
        return []
    }

    private static func tokenNodes(_ settings: Node) -> [Node] {
        mapping(settings).flatMap { value($0, "tokens") }.map(sequenceItems) ?? []
    }

    private static func unknownKeys(_ mapping: Node.Mapping, known: [String], path: String) throws(TenantsFileError) {
        var seen = Set<String>()
        for (key, _) in mapping {
            let name = key.scalar?.string ?? "?"
            let full = path.isEmpty ? name : "\(path).\(name)"
            guard known.contains(name) else {
                throw TenantsFileError(line: line(key), key: full, message: "unknown key (known: \(known.joined(separator: ", ")))")
            }
            guard seen.insert(name).inserted else {
                throw TenantsFileError(line: line(key), key: full, message: "given twice")
            }
        }
    }

    private static func string(_ node: Node, _ key: String) throws(TenantsFileError) -> String {
        guard let s = node.scalar?.string else { throw TenantsFileError(line: line(node), key: key, message: "a string") }
        return s
    }

    private static func strings(_ node: Node, _ key: String) throws(TenantsFileError) -> [String] {
        guard case .sequence(let items) = node else { throw TenantsFileError(line: line(node), key: key, message: "a list") }
        var out: [String] = []
        for item in items { out.append(try string(item, key)) }
        return out
    }

    private static func count(_ node: Node, _ key: String) throws(TenantsFileError) -> Int {
        guard let n = node.scalar.flatMap({ Int($0.string) }), n > 0 else {
            throw TenantsFileError(line: line(node), key: key, message: "a whole number above 0")
        }
        return n
    }

    /// 5000000, or with a decimal unit: 500KB, 10MB, 2GB.
    private static func bytes(_ node: Node, _ key: String) throws(TenantsFileError) -> Int {
        let text = (node.scalar?.string ?? "").uppercased()
        let units: [(String, Int)] = [("GB", 1_000_000_000), ("MB", 1_000_000), ("KB", 1_000), ("B", 1)]
        let (digits, unit) = units.first { text.hasSuffix($0.0) }.map { (String(text.dropLast($0.0.count)), $0.1) } ?? (text, 1)
        guard let n = Int(digits.trimmingSpaces), n > 0, n <= Int.max / unit else {
            throw TenantsFileError(line: line(node), key: key, message: "a number of bytes: 5000000, 500KB, 10MB, 2GB")
        }
        return n * unit
    }

    private static func isName(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.count <= 64 && s.first != "-"
            && s.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7a) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2d }
    }

    private static func isPrefix(_ s: String) -> Bool {
        s.hasSuffix("/") && s.dropLast().split(separator: "/", omittingEmptySubsequences: false).allSatisfy(isPrefixSegment)
    }

    /// One segment of a store prefix: letters, digits, `-`, `_` and `.`, and not `.` or `..` (what
    /// `/media/<prefix><name>` accepts, too).
    public static func isPrefixSegment(_ segment: Substring) -> Bool {
        !segment.isEmpty && segment != "." && segment != ".."
            && segment.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7a) || ($0 >= 0x41 && $0 <= 0x5a) || ($0 >= 0x30 && $0 <= 0x39)
                || $0 == 0x2d || $0 == 0x5f || $0 == 0x2e }
    }

    private static func error(_ error: YamlError) -> TenantsFileError {
        switch error {
        case .scanner(_, let problem, let mark, _), .parser(_, let problem, let mark, _), .composer(_, let problem, let mark, _):
            return TenantsFileError(line: mark.line, key: "", message: problem)
        case .duplicatedKeysInMapping(let duplicates, let context):
            // YAML's reader stops at the mapping, before keys have paths: its line, and the key.
            return TenantsFileError(line: context.mark.line, key: duplicates.joined(separator: ", "),
                                    message: "given twice in the mapping that starts on this line")
        default:
            return TenantsFileError(line: 0, key: "", message: "\(error)")
        }
    }
}

/// What is wrong with a tenants file, and where: `line 12: tenants.acme.hostz: unknown key …`.
public struct TenantsFileError: Error, Sendable, CustomStringConvertible, Equatable {
    public let line: Int
    public let key: String
    public let message: String

    public var description: String {
        (line > 0 ? "line \(line): " : "") + (key.isEmpty ? "" : "\(key): ") + message
    }
}

extension String {
    fileprivate var trimmingSpaces: String {
        var s = Substring(self)
        while s.first == " " { s.removeFirst() }
        while s.last == " " { s.removeLast() }
        return String(s)
    }
}
