import ArgumentParser
import AttachePayload
import AttacheFetch
import Testing
@testable import AttacheCommandLine

/// A fixed environment for the tests.
struct Variables: SettingsSource {
    let values: [String: String]
    func value(of variable: String) -> String? { values[variable] }
}

@Suite struct SettingsTests {
    func settings(_ values: [String: String]) -> Settings { Settings(Variables(values: values)) }

    @Test func aFlagWinsThenTheVariableThenTheDefault() throws {
        let s = settings(["ATTACHE_PORT": "9000"])
        #expect(try s.int(8080, "ATTACHE_PORT", option: "--port", default: 1, in: 0...65535) == 8080)
        #expect(try s.int(nil, "ATTACHE_PORT", option: "--port", default: 1, in: 0...65535) == 9000)
        #expect(try settings([:]).int(nil, "ATTACHE_PORT", option: "--port", default: 1, in: 0...65535) == 1)
    }

    /// The bad value names its variable (or its flag) — it is never silently dropped.
    @Test(arguments: [
        ("ATTACHE_MAX_IN_FLIGHT", "lots", #"ATTACHE_MAX_IN_FLIGHT="lots" is not a whole number"#),
        ("ATTACHE_MAX_IN_FLIGHT", "0", "ATTACHE_MAX_IN_FLIGHT must be between 1 and 100 (got 0)"),
        ("ATTACHE_DEADLINE", "soon", #"ATTACHE_DEADLINE="soon" is not a duration: write it with a unit, as 300ms, 2s, 1.5s or 2m"#),
        ("ATTACHE_DEADLINE", "0s", "ATTACHE_DEADLINE must be positive"),
        ("ATTACHE_LOG_FORMAT", "xml", #"ATTACHE_LOG_FORMAT="xml" is not one of text, json"#),
        ("ATTACHE_ALLOW_ADDRESSES", "10.0.0.0/8,nope", #"ATTACHE_ALLOW_ADDRESSES: "nope" is not an address or CIDR"#),
    ])
    func badValuesAreErrorsNamingTheVariable(_ variable: String, _ value: String, _ message: String) {
        let s = settings([variable: value])
        #expect {
            switch variable {
            case "ATTACHE_MAX_IN_FLIGHT": _ = try s.int(nil, variable, option: "--max-in-flight", default: 5, in: 1...100)
            case "ATTACHE_DEADLINE": _ = try s.duration(nil, variable, option: "--deadline", default: .seconds(1))
            case "ATTACHE_LOG_FORMAT": _ = try s.choice(nil as Format?, variable, default: .text)
            default: _ = try s.cidrs([], variable)
            }
        } throws: { ($0 as? ValidationError)?.message == message }
    }

    @Test func anOutOfRangeFlagNamesTheFlag() {
        #expect { try settings([:]).int(0, "ATTACHE_PORT", option: "--max-attachments", default: 4, in: 1...16) } throws: {
            ($0 as? ValidationError)?.message == "--max-attachments must be between 1 and 16 (got 0)"
        }
    }

    @Test func listsAddToTheFlagsAndDropBlanks() throws {
        let s = settings(["ATTACHE_TOKENS": " a, b,,c ", "ATTACHE_ALLOW_ADDRESSES": "127.0.0.1/32, ::1"])
        #expect(s.list(["x"], "ATTACHE_TOKENS") == ["x", "a", "b", "c"])
        #expect(try s.cidrs([], "ATTACHE_ALLOW_ADDRESSES").count == 2)
        #expect(try s.duration(nil, "ATTACHE_CACHE_TTL", option: "--cache-ttl", default: .zero, positive: false) == .zero)
    }

    @Test func theEnrichGroupReadsEveryOptionFromTheEnvironment() throws {
        let s = settings([
            "ATTACHE_DEADLINE": "1500ms", "ATTACHE_THUMBNAIL_SIZE": "200", "ATTACHE_POSTER": "exact",
            "ATTACHE_MEDIA_KEYS": "pic,photo", "ATTACHE_ON_TIMEOUT": "best-attempt", "ATTACHE_MEDIA_DIR": "/tmp/m",
        ])
        let options = try EnrichOptionGroup.parse([]).options(s, storage: try .parse([]))
        #expect(options.runtime.budget == .milliseconds(1500))
        #expect(options.media.render.thumbnailSize == 200)
        #expect(options.media.posterMode == .exact)
        #expect(options.media.dialects.genericKeys == DialectReader.defaultGenericKeys + ["pic", "photo"])  // added to the defaults
        #expect(options.runtime.onTimeout == .bestAttempt)
        #expect(options.storage.directory == "/tmp/m")
        #expect(try EnrichOptionGroup.parse(["--no-default-media-keys", "--media-key", "/d/img"]).options(settings([:]), storage: try .parse([])).media.dialects.genericKeys == ["/d/img"])
        #expect(try EnrichOptionGroup.parse([]).options(settings(["ATTACHE_NO_DEFAULT_MEDIA_KEYS": "true"]), storage: try .parse([])).media.dialects.genericKeys.isEmpty)
        #expect(throws: (any Error).self) { try EnrichOptionGroup.parse(["--media-key", "/a~x"]).options(settings([:]), storage: try .parse([])) }
        let flagged = try EnrichOptionGroup.parse(["--thumbnail-size", "100", "--display-size", "150"]).options(s, storage: try .parse([]))
        #expect((flagged.media.render.thumbnailSize, flagged.media.render.displaySize) == (100, 150))
        #expect { try EnrichOptionGroup.parse(["--display-size", "100"]).options(s, storage: try .parse([])) } throws: {
            ($0 as? ValidationError)?.message == "--display-size must be between 200 and 8192 (got 100)"
        }
    }

    @Test(arguments: [("300ms", 300), ("2s", 2000), ("1.5s", 1500)])
    func durations(_ text: String, _ ms: Int) throws {
        #expect(try parseDuration(text) == .milliseconds(ms))
    }

    /// A bare number could be seconds or milliseconds (`Attache-Deadline-Ms: 1500` is 1.5 s): it
    /// is refused with both spellings; a deadline above the longest one is refused at start.
    @Test func aDurationNeedsItsUnitAndADeadlineStaysUnderTheMaximum() throws {
        #expect { try parseDuration("1500") } throws: {
            let message = ($0 as? ValidationError)?.message ?? ""
            return message.contains("1500ms") && message.contains("1500s")
        }
        #expect(try parseDuration("0") == .zero)
        #expect(throws: (any Error).self) { try EnrichOptionGroup.parse(["--deadline", "1500"]) }
        #expect { try EnrichOptionGroup.parse([]).options(settings(["ATTACHE_DEADLINE": "1500"]), storage: try .parse([])) } throws: {
            ($0 as? ValidationError)?.message.contains(#"ATTACHE_DEADLINE="1500" has no unit"#) ?? false
        }
        #expect { try EnrichOptionGroup.parse(["--deadline", "40s"]).options(settings([:]), storage: try .parse([])) } throws: {
            ($0 as? ValidationError)?.message.hasPrefix("--deadline 40s is above the longest deadline, 30s") ?? false
        }
        #expect(try EnrichOptionGroup.parse(["--deadline", "40s", "--max-deadline", "1m"]).options(settings([:]), storage: try .parse([])).runtime.budget == .seconds(40))
        // The command's own default gives way to a lower maximum.
        #expect(try EnrichOptionGroup.parse(["--max-deadline", "5s"]).options(settings([:]), storage: try .parse([])).runtime.budget == .seconds(5))
    }

    enum Format: String, CaseIterable { case text, json }

    /// What `attache config` prints: each setting once, with the source that gave its value, and
    /// no secret in the clear.
    @Test func theRecordSaysWhereEachValueCameFromAndHidesSecrets() throws {
        let record = SettingsRecord()
        let s = Settings(Variables(values: ["ATTACHE_DEADLINE": "2s", "ATTACHE_TOKENS": "t1,t2", "ATTACHE_HOST": "0.0.0.0"]), record: record)
        _ = try s.int(9000, "ATTACHE_PORT", option: "--port", default: 8080, in: 0...65535)
        _ = try s.duration(nil, "ATTACHE_DEADLINE", option: "--deadline", default: .seconds(10))
        _ = try s.duration(nil, "ATTACHE_CACHE_TTL", option: "--cache-ttl", default: .seconds(3600), positive: false)
        _ = s.list(["flagged"], "ATTACHE_TOKENS")
        _ = s.string(nil, "ATTACHE_HOST", default: "127.0.0.1")
        _ = s.string(nil, "ATTACHE_HOST", default: "127.0.0.1")  // read twice: listed once
        _ = s.secret("ATTACHE_NATS_PASSWORD")
        let entries = record.all
        #expect(entries.map(\.variable) == ["ATTACHE_PORT", "ATTACHE_DEADLINE", "ATTACHE_CACHE_TTL", "ATTACHE_TOKENS", "ATTACHE_HOST", "ATTACHE_NATS_PASSWORD"])
        #expect(entries.map(\.source) == [.flag, .environment, .default, .flag, .environment, .default])
        #expect(entries.map(\.value) == ["9000", "2s", "3600s", "<redacted>", "0.0.0.0", ""])
        let table = record.table()
        #expect(!table.contains("t1") && !table.contains("flagged"))
        #expect(table.split(separator: "\n").count == entries.count + 1)
    }
}
