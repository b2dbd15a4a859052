/// Decides, for the address a connection is about to be made to, whether it may be made.
///
/// It judges the socket address curl resolved, never the URL's text, so every spelling of an
/// address (`2130706433`, `0x7f000001`, `127.1`, `[::ffff:127.0.0.1]`) is judged by where it goes.
public struct AddressPolicy: Sendable {
    /// Networks the operator explicitly allowed (`--allow-address`); empty by default.
    public var allowed: [CIDR]
    /// Single sockets allowed whatever their address: a tool's own loopback server (the lab's
    /// fault origin), reachable while every other port on loopback stays denied.
    public var allowedEndpoints: [Endpoint]

    public struct Endpoint: Sendable, Equatable {
        public var address: IPAddress
        public var port: Int
        public init(address: IPAddress, port: Int) {
            self.address = address
            self.port = port
        }
    }

    public init(allowed: [CIDR] = [], allowedEndpoints: [Endpoint] = []) {
        self.allowed = allowed
        self.allowedEndpoints = allowedEndpoints
    }

    /// Every address allowed: for traffic to a configured endpoint (an object store, the relay's
    /// upstream), never for a URL a payload names.
    public static let anyAddress = AddressPolicy(allowed: [CIDR("0.0.0.0/0")!, CIDR("::/0")!])

    public enum Verdict: Sendable, Equatable {
        case allow
        /// Denied, with the name of the special-purpose range that matched.
        case deny(String)
    }

    /// `port`: the socket's, when it is known (an address literal judged before connecting has none).
    public func judge(_ address: IPAddress, port: Int? = nil) -> Verdict {
        if let port, allowedEndpoints.contains(Endpoint(address: address, port: port)) { return .allow }
        if allowed.contains(where: { $0.contains(address) }) { return .allow }
        // An IPv4 address carried inside IPv6 is judged as the IPv4 address it reaches.
        if let embedded = Self.embeddedIPv4(address) {
            if allowed.contains(where: { $0.contains(embedded) }) { return .allow }
            return Self.classify(embedded).map(Verdict.deny) ?? .allow
        }
        return Self.classify(address).map(Verdict.deny) ?? .allow
    }

    private static let ipv4Denied: [(CIDR, String)] = [
        ("0.0.0.0/8", "unspecified"), ("10.0.0.0/8", "private"), ("100.64.0.0/10", "cgnat"),
        ("127.0.0.0/8", "loopback"), ("169.254.0.0/16", "link-local"), ("172.16.0.0/12", "private"),
        ("192.0.0.0/24", "reserved"), ("192.0.2.0/24", "documentation"), ("192.88.99.0/24", "reserved"),
        ("192.168.0.0/16", "private"), ("198.18.0.0/15", "benchmarking"), ("198.51.100.0/24", "documentation"),
        ("203.0.113.0/24", "documentation"), ("224.0.0.0/4", "multicast"), ("240.0.0.0/4", "reserved"),
    ].map { (CIDR($0.0)!, $0.1) }

    private static let ipv6Denied: [(CIDR, String)] = [
        ("::/128", "unspecified"), ("::1/128", "loopback"), ("fe80::/10", "link-local"),
        ("fc00::/7", "unique-local"), ("ff00::/8", "multicast"), ("100::/64", "discard"),
        ("2001:db8::/32", "documentation"), ("fec0::/10", "site-local"), ("2001:10::/28", "orchid"),
        ("2001:20::/28", "orchid"),
    ].map { (CIDR($0.0)!, $0.1) }

    /// The special-purpose range an address is in (`loopback`, `private`, …), nil for a public one.
    public static func classify(_ address: IPAddress) -> String? {
        if address.isIPv4 {
            if address.bytes == [255, 255, 255, 255] { return "broadcast" }
            return ipv4Denied.first { $0.0.contains(address) }?.1
        }
        return ipv6Denied.first { $0.0.contains(address) }?.1
    }

    /// The IPv4 address inside an IPv4-mapped, -translated, -compatible, NAT64, 6to4 or Teredo address.
    static func embeddedIPv4(_ address: IPAddress) -> IPAddress? {
        let b = address.bytes
        guard b.count == 16 else { return nil }
        let first10Zero = b[0..<10].allSatisfy { $0 == 0 }
        if first10Zero && b[10] == 0xff && b[11] == 0xff { return IPAddress(bytes: Array(b[12..<16])) }  // ::ffff:a.b.c.d
        // IPv4-translated ::ffff:0:a.b.c.d (RFC 2765, SIIT).
        if b[0..<8].allSatisfy({ $0 == 0 }) && b[8] == 0xff && b[9] == 0xff && b[10] == 0 && b[11] == 0 {
            return IPAddress(bytes: Array(b[12..<16]))
        }
        if first10Zero && b[10] == 0 && b[11] == 0 {
            // IPv4-compatible ::a.b.c.d (but not :: or ::1, which are IPv6's own).
            if b[12..<15].allSatisfy({ $0 == 0 }) && b[15] <= 1 { return nil }
            return IPAddress(bytes: Array(b[12..<16]))
        }
        if b[0..<12] == [0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0][...] {  // 64:ff9b::/96 NAT64
            return IPAddress(bytes: Array(b[12..<16]))
        }
        if b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && b[4] == 0 && b[5] == 1 {  // 64:ff9b:1::/48
            return IPAddress(bytes: Array(b[12..<16]))
        }
        if b[0] == 0x20 && b[1] == 0x02 { return IPAddress(bytes: Array(b[2..<6])) }  // 6to4 2002::/16
        if b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0 {  // Teredo 2001::/32: client is inverted
            return IPAddress(bytes: b[12..<16].map { ~$0 })
        }
        return nil
    }
}
