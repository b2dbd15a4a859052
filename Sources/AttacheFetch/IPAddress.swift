/// An IPv4 or IPv6 address as raw bytes, with just enough parsing for CIDR allowances.
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    /// 4 bytes for IPv4, 16 for IPv6, network order.
    public let bytes: [UInt8]

    public init?(bytes: [UInt8]) {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    public var isIPv4: Bool { bytes.count == 4 }

    /// Parses dotted-quad IPv4 (exactly four decimal parts) or RFC 4291 IPv6 text.
    public init?(_ text: String) {
        if text.contains(":") {
            guard let b = IPAddress.parseIPv6(Substring(text)) else { return nil }
            bytes = b
        } else {
            guard let b = IPAddress.parseIPv4(Substring(text)) else { return nil }
            bytes = b
        }
    }

    private static func parseIPv4(_ text: Substring) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var out: [UInt8] = []
        for part in parts {
            guard !part.isEmpty, part.count <= 3, part.allSatisfy(\.isASCII), let v = UInt8(part) else { return nil }
            out.append(v)
        }
        return out
    }

    private static func parseIPv6(_ text: Substring) -> [UInt8]? {
        var head: [UInt16] = [], tail: [UInt16] = []
        var sawGap = false
        let halves: [String]
        if let gap = text.firstRange(of: "::") {
            halves = [String(text[..<gap.lowerBound]), String(text[gap.upperBound...])]
            guard !halves[1].contains("::") else { return nil }
        } else {
            halves = [String(text)]
        }
        sawGap = halves.count == 2
        func groups(_ s: String, allowV4: Bool) -> [UInt16]? {
            if s.isEmpty { return [] }
            var result: [UInt16] = []
            let parts = s.split(separator: ":", omittingEmptySubsequences: false)
            for (i, p) in parts.enumerated() {
                if allowV4, i == parts.count - 1, p.contains(".") {
                    guard let v4 = parseIPv4(p) else { return nil }
                    result.append(UInt16(v4[0]) << 8 | UInt16(v4[1]))
                    result.append(UInt16(v4[2]) << 8 | UInt16(v4[3]))
                } else {
                    guard (1...4).contains(p.count), let v = UInt16(p, radix: 16) else { return nil }
                    result.append(v)
                }
            }
            return result
        }
        guard let h = groups(halves[0], allowV4: !sawGap) else { return nil }
        head = h
        if sawGap {
            guard let t = groups(halves[1], allowV4: true) else { return nil }
            tail = t
            guard head.count + tail.count <= 7 else { return nil }
        } else if head.count != 8 {
            return nil
        }
        let all = head + Array(repeating: 0, count: 8 - head.count - tail.count) + tail
        return all.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xff)] }
    }

    public var description: String {
        if isIPv4 { return bytes.map(String.init).joined(separator: ".") }
        return stride(from: 0, to: 16, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
            .joined(separator: ":")
    }
}

/// A network in CIDR notation (`127.0.0.1/32`, `fd00::/8`); a bare address means a single host.
public struct CIDR: Sendable, Hashable, CustomStringConvertible {
    public let network: IPAddress
    public let prefixLength: Int

    public init(network: IPAddress, prefixLength: Int) {
        self.network = network
        self.prefixLength = min(max(prefixLength, 0), network.bytes.count * 8)
    }

    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let address = IPAddress(String(parts[0])) else { return nil }
        let maxBits = address.bytes.count * 8
        var length = maxBits
        if parts.count == 2 {
            guard let l = Int(parts[1]), (0...maxBits).contains(l) else { return nil }
            length = l
        }
        self.init(network: address, prefixLength: length)
    }

    public func contains(_ address: IPAddress) -> Bool {
        guard address.bytes.count == network.bytes.count else { return false }
        var bits = prefixLength
        for i in 0..<network.bytes.count where bits > 0 {
            let take = min(bits, 8)
            let mask = UInt8(truncatingIfNeeded: 0xff << (8 - take))
            if address.bytes[i] & mask != network.bytes[i] & mask { return false }
            bits -= take
        }
        return true
    }

    public var description: String { "\(network)/\(prefixLength)" }
}
