import Attache
import AttacheEnrichment
import AttacheFetch
@testable import AttacheTenants
import Testing

/// The tenants file: what it may say, and every refusal with its line and key.
@Suite struct TenantsFileTests {
    static let hashA = TenantToken.hashLine("token-a")
    static let hashB = TenantToken.hashLine("token-b")

    @Test func readsEverySetting() throws {
        let tenants = try TenantsFile.parse("""
        tenants:
          acme:
            tokens: ["\(Self.hashA)"]
            hosts: ["cdn.acme.example", "*.acme-media.example"]
            store-prefix: brands/acme/
            public-base-url: https://media.acme.example
            max-deadline: 1500ms
            max-pixels: 20000000
            max-image-bytes: 5MB
            max-movie-bytes: 20MB
            max-sound-bytes: 1MB
            rate: {per-second: 2.5, burst: 10}
            concurrency: 8
            daily-download-bytes: 2GB
            cache-group: brands
            apps: [com.acme.app, acme-prod]
          beta:
            tokens:
              - \(Self.hashB)
        """)
        #expect(tenants.map(\.name) == ["acme", "beta"])
        let acme = tenants[0]
        #expect(acme.tokenHashes == [try #require(TenantToken.digest(Self.hashA))])
        #expect(acme.hosts?.allows(host: "x.acme-media.example") == true)
        #expect(acme.storePrefix == "brands/acme/")
        #expect(acme.publicBaseURL == "https://media.acme.example")
        #expect(acme.maxBudget == .milliseconds(1500))
        #expect(acme.limits?.maxPixels == 20_000_000)
        #expect(acme.limits?.imageBytes == 5_000_000)
        #expect(acme.limits?.videoBytes == 20_000_000)
        #expect(acme.limits?.audioBytes == 1_000_000)
        #expect(acme.rate == Tenant.Rate(perSecond: 2.5, burst: 10))
        #expect(acme.concurrency == 8)
        #expect(acme.dailyDownloadBytes == 2_000_000_000)
        #expect(acme.cacheNamespace == "group:brands")
        #expect(acme.apps == ["com.acme.app", "acme-prod"])
        // Defaults: the tenant's name as its prefix, any host, the service's caps, its own cache.
        let beta = tenants[1]
        #expect(beta.storePrefix == "beta/")
        #expect(beta.hosts == nil && beta.limits == nil && beta.rate == nil && beta.concurrency == nil)
        #expect(beta.cacheNamespace == "tenant:beta")
    }

    @Test func jsonIsReadToo() throws {
        let tenants = try TenantsFile.parse(#"{"tenants": {"acme": {"tokens": ["\#(Self.hashA)"], "concurrency": 3}}}"#)
        #expect(tenants.first?.concurrency == 3)
    }

    /// Each bad file names the line and the key.
    @Test(arguments: [
        ("tenants:\n  acme:\n    tokens: [\"\(hashA)\"]\n    hostz: [a.example]\n", 4, "tenants.acme.hostz", "unknown key"),
        ("tenants:\n  acme:\n    tokens: [\"\(hashA)\"]\n  beta:\n    tokens:\n      - \(hashA)\n", 6, "tenants.beta.tokens", "a token of tenant acme too"),
        ("tenants:\n  acme:\n    tokens: [\"\(hashA)\", \"\(hashA)\"]\n", 3, "tenants.acme.tokens", "the same token twice"),
        ("tenants:\n  acme:\n    tokens: [\"\(hashA)\"]\n    hosts:\n      - ok.example\n      - \"*.com\"\n", 6, "tenants.acme.hosts", "a wildcard"),
        ("tenants:\n  acme:\n    tokens: [\"token-a\"]\n", 3, "tenants.acme.tokens", "not sha256:"),
        ("tenants:\n  acme:\n    hosts: [a.example]\n", 3, "tenants.acme.tokens", "missing"),
        ("tenants:\n  acme:\n    tokens: [\"\(hashA)\"]\n  beta:\n    tokens: [\"\(hashB)\"]\n    store-prefix: acme/\n", 6, "tenants.beta.store-prefix", "cache-group"),
        ("tenants:\n  acme:\n    tokens: [\"\(hashA)\"]\n    store-prefix: ../etc/\n", 4, "tenants.acme.store-prefix", "segments"),
        ("tenants:\n  acme:\n    tokens: [\"\(hashA)\"]\n    rate: {per-second: 0}\n", 4, "tenants.acme.rate.per-second", "above 0"),
        ("tenants:\n  acme:\n    tokens: [\"\(hashA)\"]\n    max-deadline: soon\n", 4, "tenants.acme.max-deadline", "a duration"),
        ("tenants:\n  acme:\n    tokens: [\"\(hashA)\"]\n    daily-download-bytes: lots\n", 4, "tenants.acme.daily-download-bytes", "a number of bytes"),
        ("tenants:\n  Acme:\n    tokens: [\"\(hashA)\"]\n", 2, "tenants.Acme", "lower-case"),
        ("tenantz:\n  acme: {}\n", 1, "tenantz", "unknown key"),
        ("tenants:\n  acme:\n    tokens: [\"\(hashA)\"]\n    concurrency: 2\n    concurrency: 3\n", 4, "concurrency", "given twice"),
        ("tenants:\n  acme:\n    tokens: [\"\(hashA)\"]\n    apps: [x]\n  beta:\n    tokens: [\"\(hashB)\"]\n    apps: [x]\n", 7, "tenants.beta.apps", "tenant acme's too"),
        ("tenants:\n  acme: [\n", 3, "", "node"),
    ] as [(String, Int, String, String)])
    func refusesWithLineAndKey(_ text: String, _ line: Int, _ key: String, _ message: String) {
        #expect(throws: TenantsFileError.self) { try TenantsFile.parse(text) }
        do {
            _ = try TenantsFile.parse(text)
        } catch {
            #expect(error.line == line, "\(error)")
            #expect(error.key == key, "\(error)")
            #expect(error.message.contains(message), "\(error)")
        }
    }

    @Test func tokensAreHashedAndFoundInConstantTime() throws {
        let token = TenantToken.make()
        #expect(token.hasPrefix("att_") && token.count > 40)
        #expect(TenantToken.make() != token)
        let tenants = try Tenants(TenantsFile.parse("tenants:\n  acme:\n    tokens: [\"\(TenantToken.hashLine(token))\"]\n  beta:\n    tokens: [\"\(Self.hashB)\"]\n"),
                                  makeScope: { EnrichmentScope(name: $0.name) })
        #expect(tenants.tenant(token: Array(token.utf8))?.name == "acme")
        #expect(tenants.tenant(token: Array("token-b".utf8))?.name == "beta")
        #expect(tenants.tenant(token: Array("token-c".utf8)) == nil)
        #expect(tenants.tenant(token: [UInt8]()) == nil)
        #expect(tenants.tenant(token: Array(TenantToken.hashLine(token).utf8)) == nil)  // the hash is not the token
    }
}

@Suite struct TenantAdmissionTests {
    func tenant(rate: Tenant.Rate? = nil, concurrency: Int? = nil, quota: Int? = nil) -> Tenant {
        Tenant(name: "acme", tokenHashes: [], rate: rate, concurrency: concurrency, dailyDownloadBytes: quota)
    }

    @Test func aBurstThenTheRate() {
        let t = tenant(rate: .init(perSecond: 2, burst: 3))
        let counters = TenantCounters(burst: 3)
        let start = ContinuousClock.now
        for _ in 0..<3 {
            #expect(counters.enter(t, now: start) == nil)
            counters.leave()
        }
        let refused = counters.enter(t, now: start)
        #expect(refused?.kind == .rate)
        #expect(refused?.retryAfter == 1)
        // Half a second later one token has come back: one more, then refused again.
        #expect(counters.enter(t, now: start + .milliseconds(500)) == nil)
        #expect(counters.enter(t, now: start + .milliseconds(500))?.kind == .rate)
    }

    @Test func concurrencyCountsWhatIsInFlight() {
        let t = tenant(concurrency: 2)
        let counters = TenantCounters(burst: 1)
        #expect(counters.enter(t) == nil)
        #expect(counters.enter(t) == nil)
        #expect(counters.enter(t)?.kind == .concurrency)
        counters.leave()
        #expect(counters.enter(t) == nil)
        #expect(counters.inFlight == 2)
    }

    @Test func theDailyQuotaEndsAtMidnightUTC() {
        let t = tenant(quota: 1000)
        let counters = TenantCounters(burst: 1)
        let day = 20_000 * 86_400, noon = day + 43_200
        #expect(counters.enter(t, wallSeconds: noon) == nil)
        #expect(counters.claim(600, quota: 1000, wallSeconds: noon))
        #expect(!counters.claim(600, quota: 1000, wallSeconds: noon), "a chunk that does not fit in what is left is refused")
        #expect(counters.claim(400, quota: 1000, wallSeconds: noon))
        #expect(!counters.claim(1, quota: 1000, wallSeconds: noon))
        counters.leave()
        let refused = counters.enter(t, wallSeconds: noon + 1)
        #expect(refused?.kind == .quota)
        #expect(refused?.retryAfter == 43_199)
        #expect(counters.enter(t, wallSeconds: day + 86_400) == nil)  // the next day
    }

    /// A new version of the file keeps each tenant's counts: a reload hands no one a new burst.
    @Test func countsOutliveAReload() throws {
        let t = tenant(rate: .init(perSecond: 0.001, burst: 1))
        let tenants = try Tenants([t], makeScope: { EnrichmentScope(name: $0.name) })
        #expect(tenants.enter(t) == nil)
        tenants.leave(t)
        try tenants.update([t, Tenant(name: "beta", tokenHashes: [])])
        #expect(tenants.enter(t)?.kind == .rate)
        #expect(tenants.all.map(\.name) == ["acme", "beta"])
    }
}
