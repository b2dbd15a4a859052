import ArgumentParser
import Attache
import AttacheEnrichment
import AttachePayload
import AttacheFetch
import Configuration
import Testing
@testable import AttacheCommandLine

@Suite struct SettingsTests {
    /// The settings a command reads with `flags`, given `variables` as its environment.
    func settings(_ variables: [String: String], flags: Flags = Flags()) -> Settings {
        Settings(flags: flags, environment: Settings.provider(named: "test", variables: variables))
    }

    func flags(_ group: some FlagGroup) -> Flags { group.flags }

    func enrichment(_ arguments: [String] = [], _ variables: [String: String] = [:], door: EnrichingDoor = .enrich) throws -> Enrichment.Configuration {
        let enrich = try EnrichOptionGroup.parse(arguments)
        let s = settings(variables, flags: enrich.flags)
        return try s.read { try Enrichment.Configuration(settings: $0, door: door) }
    }

    @Test func aFlagWinsThenTheVariableThenTheDefault() throws {
        var given = Flags()
        given.set(.port, 8080)
        #expect(try settings(["ATTACHE_PORT": "9000"], flags: given).attache.int(.port, default: 1, in: 0...65535) == 8080)
        #expect(try settings(["ATTACHE_PORT": "9000"]).attache.int(.port, default: 1, in: 0...65535) == 9000)
        #expect(try settings([:]).attache.int(.port, default: 1, in: 0...65535) == 1)
        // The file comes after the environment.
        let filed = Settings(flags: Flags(), environment: Settings.provider(named: "test", variables: ["ATTACHE_PORT": "9000"]),
                             file: ["ATTACHE_PORT": "7000", "ATTACHE_HOST": "0.0.0.0"])
        #expect(try filed.attache.int(.port, default: 1, in: 0...65535) == 9000)
        #expect(filed.attache.text(.host, default: "127.0.0.1") == "0.0.0.0")
        #expect(filed.record.all.map(\.source) == [.environment, .file])
    }

    /// A key's variable and flag are spelt from its name, as the environment provider spells it.
    @Test func aKeyGivesItsVariableAndItsFlag() {
        #expect(SettingKey.maxConnectionsPerAddress.variable == "ATTACHE_MAX_CONNECTIONS_PER_ADDRESS")
        #expect(SettingKey.cacheTTL.option == "--cache-ttl")
        #expect(SettingKey.natsCA.variable == "ATTACHE_NATS_CA")
    }

    /// The bad value names its variable (or its flag) — it is never silently dropped.
    @Test(arguments: [
        ("ATTACHE_MAX_IN_FLIGHT", "lots", #"ATTACHE_MAX_IN_FLIGHT="lots" is not a whole number"#),
        ("ATTACHE_MAX_IN_FLIGHT", "0", "ATTACHE_MAX_IN_FLIGHT must be between 1 and 100 (got 0)"),
        ("ATTACHE_DEADLINE", "soon", #"ATTACHE_DEADLINE="soon" is not a duration: write it with a unit, as 300ms, 2s, 1.5s or 2m"#),
        ("ATTACHE_DEADLINE", "0s", "ATTACHE_DEADLINE must be positive"),
        ("ATTACHE_LOG_FORMAT", "xml", #"ATTACHE_LOG_FORMAT="xml" is not one of text, json"#),
        ("ATTACHE_ALLOW_ADDRESSES", "10.0.0.0/8,nope", #"ATTACHE_ALLOW_ADDRESSES: "nope" is not an address or CIDR"#),
        ("ATTACHE_NO_TRANSCODE", "maybe", #"ATTACHE_NO_TRANSCODE="maybe" is not true or false"#),
    ])
    func badValuesAreErrorsNamingTheVariable(_ variable: String, _ value: String, _ message: String) {
        let s = settings([variable: value])
        #expect {
            try s.read { settings in
                let reader = settings.attache
                switch variable {
                case "ATTACHE_MAX_IN_FLIGHT": _ = try reader.int(.maxInFlight, default: 5, in: 1...100)
                case "ATTACHE_DEADLINE": _ = try reader.duration(.deadline, default: .seconds(1))
                case "ATTACHE_LOG_FORMAT": _ = try LogFormat(reader: reader)
                case "ATTACHE_NO_TRANSCODE": _ = try reader.flag(.noTranscode)
                default: _ = try reader.cidrs(.allowAddresses)
                }
            }
        } throws: { ($0 as? ValidationError)?.message == message }
    }

    @Test func anOutOfRangeFlagNamesTheFlag() {
        #expect { try enrichment(["--max-attachments", "0"]) } throws: {
            ($0 as? ValidationError)?.message == "--max-attachments must be between 1 and 16 (got 0)"
        }
    }

    /// A list is comma-separated, blanks dropped; repeated flags replace the variable's list.
    @Test func listsDropBlanksAndFlagsReplaceTheVariable() throws {
        let variables = ["ATTACHE_TOKENS": " a, b,,c ", "ATTACHE_ALLOW_ADDRESSES": "127.0.0.1/32, ::1"]
        #expect(settings(variables).attache.list(.tokens) == ["a", "b", "c"])
        #expect(settings(variables, flags: flags(try TokenOptionGroup.parse(["--token", "x", "--token", "y"]))).attache.list(.tokens) == ["x", "y"])
        #expect(try settings(variables).attache.cidrs(.allowAddresses).count == 2)
        #expect(try settings([:]).attache.duration(.cacheTTL, default: .zero, positive: false) == .zero)
    }

    @Test func theEnrichmentReadsEveryOptionFromTheEnvironment() throws {
        let variables = [
            "ATTACHE_DEADLINE": "1500ms", "ATTACHE_THUMBNAIL_SIZE": "200", "ATTACHE_POSTER": "exact",
            "ATTACHE_MEDIA_KEYS": "pic,photo", "ATTACHE_ON_TIMEOUT": "best-attempt", "ATTACHE_MEDIA_DIR": "/tmp/m",
        ]
        let options = try Settings(flags: Flags([try EnrichOptionGroup.parse([]), try StorageOptionGroup.parse([])]),
                                   environment: Settings.provider(named: "test", variables: variables))
            .read { try Enrichment.Configuration(settings: $0, door: .enrich) }
        #expect(options.runtime.deadlinePolicy.default == .milliseconds(1500))
        #expect(options.media.render.thumbnailSize == 200)
        #expect(options.media.posterMode == .exact)
        #expect(options.media.dialects.genericKeys == DialectReader.defaultGenericKeys + ["pic", "photo"])  // added to the defaults
        #expect(options.runtime.deadlinePolicy.onTimeout == .bestAttempt)
        #expect(options.storage.directory == "/tmp/m")
        #expect(options.isolation == .inProcess)
        #expect(try enrichment(["--no-default-media-keys", "--media-key", "/d/img"]).media.dialects.genericKeys == ["/d/img"])
        #expect(try enrichment([], ["ATTACHE_NO_DEFAULT_MEDIA_KEYS": "true"]).media.dialects.genericKeys.isEmpty)
        #expect(throws: (any Error).self) { try enrichment(["--media-key", "/a~x"]) }
        let flagged = try enrichment(["--thumbnail-size", "100", "--display-size", "150"], variables)
        #expect((flagged.media.render.thumbnailSize, flagged.media.render.displaySize) == (100, 150))
        #expect { try enrichment(["--display-size", "100"], variables) } throws: {
            ($0 as? ValidationError)?.message == "--display-size must be between 200 and 8192 (got 100)"
        }
        // Each door reads its own parts with its own defaults.
        #expect(try enrichment([], door: .service).runtime.deadlinePolicy.default == DeadlinePolicy.service.default)
        #expect(try enrichment([], door: .service).cache?.warmThrough == EnrichingDoor.warmThrough)
        #expect(try enrichment([], ["ATTACHE_CACHE_TTL": "0"], door: .service).cache == nil)
        #expect(try enrichment([], door: .enrich).cache == nil)
        #expect(try enrichment([], door: .batch).media.conversionWait == EnrichingDoor.conversionWait)
        #expect(try enrichment([], door: .batch).isolation == .process)
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
        #expect { try enrichment([], ["ATTACHE_DEADLINE": "1500"]) } throws: {
            ($0 as? ValidationError)?.message.contains(#"ATTACHE_DEADLINE="1500" has no unit"#) ?? false
        }
        #expect { try enrichment(["--deadline", "40s"]) } throws: {
            ($0 as? ValidationError)?.message.hasPrefix("--deadline 40s is above the longest deadline, 30s") ?? false
        }
        #expect(try enrichment(["--deadline", "40s", "--max-deadline", "1m"]).runtime.deadlinePolicy.default == .seconds(40))
        // The command's own default gives way to a lower maximum.
        #expect(try enrichment(["--max-deadline", "5s"], door: .service).runtime.deadlinePolicy.default == .seconds(3))
        #expect(try enrichment(["--max-deadline", "2s"], door: .service).runtime.deadlinePolicy.default == .seconds(2))
    }

    /// What `attache config` prints: each setting once, with the source that gave its value, and
    /// no secret in the clear.
    @Test func theRecordSaysWhereEachValueCameFromAndHidesSecrets() throws {
        var given = Flags()
        given.set(.port, 9000)
        given.set(.tokens, ["flagged"])
        let s = settings(["ATTACHE_DEADLINE": "2s", "ATTACHE_TOKENS": "t1,t2", "ATTACHE_HOST": "0.0.0.0"], flags: given)
        let reader = s.attache
        _ = try reader.int(.port, default: 8080, in: 0...65535)
        _ = try reader.duration(.deadline, default: .seconds(10))
        _ = try reader.duration(.cacheTTL, default: .seconds(3600), positive: false)
        _ = reader.list(.tokens)
        _ = reader.text(.host, default: "127.0.0.1")
        _ = reader.text(.host, default: "127.0.0.1")  // read twice: listed once
        _ = reader.text(.natsPassword, secret: true)
        let entries = s.record.all
        #expect(entries.map(\.variable) == ["ATTACHE_PORT", "ATTACHE_DEADLINE", "ATTACHE_CACHE_TTL", "ATTACHE_TOKENS", "ATTACHE_HOST", "ATTACHE_NATS_PASSWORD"])
        #expect(entries.map(\.source) == [.flag, .environment, .default, .flag, .environment, .default])
        #expect(entries.map(\.value) == ["9000", "2s", "3600s", "<redacted>", "0.0.0.0", ""])
        let table = s.record.table()
        #expect(!table.contains("t1") && !table.contains("flagged"))
        #expect(table.split(separator: "\n").count == entries.count + 1)
    }

    /// Every flag a group feeds the reader is the one its key names: a flag given on the command
    /// line is read back under its key (a property named apart from its key would be lost).
    @Test func everyFlagReachesItsKey() throws {
        let arguments = [
            "--deadline", "2s", "--max-deadline", "20s", "--on-timeout", "best-attempt", "--allow-address", "10.0.0.0/8",
            "--proxy", "http://p:3128", "--thumbnail-size", "100", "--display-size", "900", "--max-payload-bytes", "5120",
            "--attachments-key", "att", "--max-attachments", "2", "--media-key", "pic", "--no-android-copy", "--poster", "exact",
            "--movie-max-bytes", "20000", "--sound-max-bytes", "20000", "--movie-keep", "10s", "--movie-edge", "640",
            "--transcode-preset", "fast", "--max-media-jobs", "3", "--isolation", "in-process", "--decoders", "5",
        ]
        let s = settings([:], flags: Flags([try EnrichOptionGroup.parse(arguments), try StorageOptionGroup.parse(["--media-dir", "/tmp/x"])]))
        _ = try s.read { try Enrichment.Configuration(settings: $0, door: .enrich) }
        let fromFlags = Set(s.record.all.filter { $0.source == .flag }.map(\.variable))
        let named = Set(arguments.filter { $0.hasPrefix("--") }.map { $0 == "--allow-address" ? "allow-addresses" : $0 == "--media-key" ? "media-keys" : String($0.dropFirst(2)) }
            .map { SettingKey(stringLiteral: $0).variable }).union(["ATTACHE_MEDIA_DIR"])
        #expect(fromFlags == named)
    }
}
