import Testing
@testable import AttacheFetch

@Suite struct AddressPolicyTests {
    let policy = AddressPolicy()

    @Test(arguments: [
        "127.0.0.1", "127.255.0.9", "0.0.0.0", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1",
        "169.254.169.254", "100.64.0.1", "224.0.0.1", "255.255.255.255", "240.0.0.1", "192.0.0.170",
        "198.18.0.1", "192.0.2.1", "198.51.100.2", "203.0.113.3",
        "::1", "::", "fe80::1", "fc00::1", "fd12:3456::1", "ff02::1",
        "::ffff:127.0.0.1", "::ffff:169.254.169.254", "::ffff:0:7f00:1", "::ffff:0:a9fe:a9fe", "::ffff:0:10.0.0.1", "::127.0.0.1", "64:ff9b::a9fe:a9fe", "2002:7f00:1::",
        "2001:0:4136:e378:8000:63bf:80ff:fffe",  // Teredo whose client is 127.0.0.1 (inverted)
        "fd00:ec2::254",
    ])
    func deniesSpecialPurposeAddresses(_ text: String) throws {
        let address = try #require(IPAddress(text))
        guard case .deny = policy.judge(address) else {
            Issue.record("\(text) was allowed")
            return
        }
    }

    @Test(arguments: ["93.184.216.34", "8.8.8.8", "172.32.0.1", "2606:4700::1111", "::ffff:8.8.8.8", "2002:808:808::"])
    func allowsPublicAddresses(_ text: String) throws {
        #expect(policy.judge(try #require(IPAddress(text))) == .allow)
    }

    @Test func allowanceOpensOnlyItsNetwork() throws {
        let allowing = AddressPolicy(allowed: [try #require(CIDR("127.0.0.1/32"))])
        #expect(allowing.judge(try #require(IPAddress("127.0.0.1"))) == .allow)
        #expect(allowing.judge(try #require(IPAddress("::ffff:127.0.0.1"))) == .allow)
        #expect(allowing.judge(try #require(IPAddress("127.0.0.2"))) != .allow)
        #expect(allowing.judge(try #require(IPAddress("::1"))) != .allow)
    }

    @Test func endpointAllowanceOpensOnlyItsPort() throws {
        let loopback = try #require(IPAddress("127.0.0.1"))
        let allowing = AddressPolicy(allowedEndpoints: [.init(address: loopback, port: 8765)])
        #expect(allowing.judge(loopback, port: 8765) == .allow)
        #expect(allowing.judge(loopback, port: 8766) != .allow)
        #expect(allowing.judge(loopback) != .allow)
        #expect(allowing.judge(try #require(IPAddress("127.0.0.2")), port: 8765) != .allow)
    }

    @Test func parsesCIDRs() {
        #expect(CIDR("10.0.0.0/8")?.contains(IPAddress("10.200.1.1")!) == true)
        #expect(CIDR("fd00::/8")?.contains(IPAddress("fd00::5")!) == true)
        #expect(CIDR("10.0.0.0/33") == nil)
        #expect(CIDR("nonsense") == nil)
        #expect(IPAddress("1.2.3") == nil)
        #expect(IPAddress("1::2::3") == nil)
    }
}
