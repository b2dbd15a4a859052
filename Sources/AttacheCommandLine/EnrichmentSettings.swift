import ArgumentParser
import Attache
import AttacheEnrichment
import AttacheFetch
import AttacheIsolation
import AttacheMedia
import AttachePayload
import AttacheStore
import AttacheSupport
import Configuration

/// What differs between the commands that enrich: their defaults and the parts of the
/// enrichment's configuration they read.
public struct EnrichingDoor: Sendable {
    /// A payload's budget when nothing names one (lowered to the longest deadline unless asked for).
    public var budget = DeadlinePolicy.standardDefault
    public var isolation: Isolation = .process
    /// Reads where results are stored (the lab keeps its own store).
    public var storage = true
    /// Keeps a media cache (the processes that stay up for the next payload).
    public var cache = false
    /// Holds a payload for its conversions (batch, the worker).
    public var conversions = false

    /// How long a payload waits for its conversions by default.
    public static let conversionWait: Duration = .seconds(600)
    /// How long warm-through goes on by default.
    public static let warmThrough: Duration = .seconds(30)

    public static let enrich = EnrichingDoor(isolation: .inProcess)
    public static let batch = EnrichingDoor(conversions: true)
    public static let service = EnrichingDoor(budget: DeadlinePolicy.service.default, cache: true)
    public static let worker = EnrichingDoor(cache: true, conversions: true)
    public static let lab = EnrichingDoor(budget: DeadlinePolicy.service.default, storage: false)
}

extension Enrichment.Configuration {
    /// The enrichment's part of the tree, as `door` reads it: `settings.attache` for its own keys,
    /// `settings.aws` for a bucket store's credentials.
    public init(settings: Settings, door: EnrichingDoor) throws {
        let reader = settings.attache
        self.init()
        runtime = try ExtensionRuntime.Configuration(reader: reader, defaultBudget: door.budget)
        if door.storage { storage = try StoreConfiguration(reader: reader, aws: settings.aws) }
        fetch = try FetchEngine.Configuration(reader: reader)
        media = try MediaEnricher.Configuration(reader: reader)
        if door.conversions {
            let wait = try reader.duration(.conversionWait, default: EnrichingDoor.conversionWait, positive: false)
            media.conversionWait = wait > .zero ? wait : nil
        }
        maxMediaJobs = try reader.int(.maxMediaJobs, default: maxMediaJobs, in: 1...1024)
        isolation = try reader.choice(.isolation, default: door.isolation)
        decoders.helpers = try reader.int(.decoders, default: decoders.helpers, in: 1...256)
        if door.cache {
            let cache = try MediaCache.Configuration(reader: reader)
            self.cache = cache.timeToLive > .zero ? cache : nil
        }
    }
}

extension ExtensionRuntime.Configuration {
    /// The deadline policy (the budget `defaultBudget` unless given, never above the longest
    /// deadline; what is emitted when it passes), the attachments key, the payload budget.
    public init(reader: ConfigReader, defaultBudget: Duration) throws {
        self.init()
        deadlinePolicy = try DeadlinePolicy(reader: reader, defaultBudget: defaultBudget)
        maxPayloadBytes = try reader.int(.maxPayloadBytes, default: maxPayloadBytes, in: 256...65536)
        attachmentsKey = reader.text(.attachmentsKey, default: attachmentsKey)
    }
}

extension DeadlinePolicy {
    /// `--max-deadline`, `--deadline` (`defaultBudget` unless given) and `--on-timeout`.
    public init(reader: ConfigReader, defaultBudget: Duration) throws {
        let defaults = DeadlinePolicy()
        let maximum = try reader.duration(.maxDeadline, default: defaults.maximum)
        // A deadline asked for above the maximum is refused (a header asking as much would be
        // capped: the two would disagree); a command's own default gives way to a lower maximum.
        let budget = try reader.duration(.deadline, default: min(defaultBudget, maximum))
        if budget > maximum {
            throw SettingError(.deadline, .message("\(DurationText.format(budget)) is above the longest deadline, \(DurationText.format(maximum)) "
                + "(\(SettingKey.maxDeadline.option) or \(SettingKey.maxDeadline.variable)): lower it or raise the longest deadline"))
        }
        self.init(default: budget, maximum: maximum, onTimeout: try reader.choice(.onTimeout, default: defaults.onTimeout))
    }
}

extension FetchEngine.Configuration {
    /// The addresses fetches may reach beyond the public ones, and a proxy.
    public init(reader: ConfigReader) throws {
        self.init()
        policy.allowed = try reader.cidrs(.allowAddresses)
        proxy = reader.text(.proxy)
    }
}

extension MediaEnricher.Configuration {
    /// Sizes, the keys media is read from, posters, conversions.
    public init(reader: ConfigReader) throws {
        self = standardOptions.media
        render.thumbnailSize = try reader.int(.thumbnailSize, default: render.thumbnailSize, in: 16...4096)
        render.displaySize = try reader.int(.displaySize, default: render.displaySize, in: render.thumbnailSize...8192)
        dialects.maxAttachments = try reader.int(.maxAttachments, default: dialects.maxAttachments, in: 1...16)
        let keys = reader.list(.mediaKeys)
        let defaults = try reader.flag(.noDefaultMediaKeys) ? [] : dialects.genericKeys
        dialects.genericKeys = defaults + keys.filter { !defaults.contains($0) }
        if let bad = DialectReader.namedKeys(in: dialects.genericKeys).first(where: { $0.hasPrefix("/") && JSONPointer($0) == nil }) {
            throw SettingError(.mediaKeys, .item("is not a JSON Pointer (RFC 6901: /a/b/0, with ~0 for ~ and ~1 for /)", raw: bad))
        }
        androidCopies = try !reader.flag(.noAndroidCopy)
        posterMode = try reader.choice(.poster, default: posterMode)
        render.transcode = try reader.flag(.noTranscode) ? nil : try TranscodeSettings(reader: reader)
    }
}

extension TranscodeSettings {
    /// The caps and the encoder's settings of the copies made for the device.
    public init(reader: ConfigReader) throws {
        self.init()
        let caps = TranscodeSettings()
        movieBytes = try reader.int(.movieMaxBytes, default: caps.movieBytes, in: 10_000...caps.movieBytes)
        soundBytes = try reader.int(.soundMaxBytes, default: caps.soundBytes, in: 10_000...caps.soundBytes)
        keepSeconds = try reader.duration(.movieKeep, default: .seconds(caps.keepSeconds)).seconds
        maxEdge = try reader.int(.movieEdge, default: caps.maxEdge, in: 64...3840)
        preset = reader.text(.transcodePreset, default: caps.preset)
        guard Self.presets.contains(preset) else {
            throw SettingError(.transcodePreset, .notA("one of \(Self.presets.joined(separator: ", "))", raw: preset))
        }
    }
}

extension StoreConfiguration {
    /// The directory or bucket, and the public base URL; a bucket's endpoint and credentials are
    /// the standard AWS variables, read from `aws`.
    public init(reader: ConfigReader, aws: ConfigReader) throws {
        self.init()
        directory = reader.text(.mediaDir, default: directory)
        if let text = reader.text(.store) {
            let parsed: (StoreLocation, directory: String?)
            do {
                parsed = try StoreLocation.parse(text) { variable in
                    let name = variable.dropFirst("AWS_".count).lowercased().replacing("_", with: "-")
                    return aws.string(forKey: ConfigKey([name]), isSecret: SettingsRecord.secrets.contains(variable)).flatMap { $0.isEmpty ? nil : $0 }
                }
            } catch {
                throw SettingError(.store, .message("\(text): \(error)"))
            }
            location = parsed.0
            if let given = parsed.directory {
                if let other = reader.text(.mediaDir), other != given {
                    throw SettingError(.store, .message("\(given) and \(SettingKey.mediaDir.option) \(other) name the same thing, the store's directory: give one"))
                }
                directory = given
            }
        }
        publicBaseURL = reader.text(.publicBaseURL)
    }
}

extension MediaCache.Configuration {
    /// How long and how many results are kept, and how long warm-through goes on (0: off). A
    /// time to live of 0 turns the cache off: the enrichment then keeps none.
    public init(reader: ConfigReader) throws {
        self.init()
        timeToLive = try reader.duration(.cacheTTL, default: timeToLive, positive: false)
        maxEntries = try reader.int(.cacheEntries, default: maxEntries, in: 1...100_000_000)
        // On by default where it pays: processes that stay up for the next payload.
        let warm = try reader.duration(.warmThrough, default: EnrichingDoor.warmThrough, positive: false)
        warmThrough = warm > .zero ? warm : nil
    }
}

extension EnrichOptionGroup {
    /// The enrichment's configuration as a one-shot command reads it: its flags (these, the
    /// store's, `more`), then the environment.
    public func configuration(storage: StorageOptionGroup?, door: EnrichingDoor, more: [any FlagGroup] = []) throws -> Enrichment.Configuration {
        let settings = Settings(flags: Flags([self] + (storage.map { [$0] } ?? []) + more))
        return try settings.read { try Enrichment.Configuration(settings: $0, door: door) }
    }
}

extension TranscodeOptionGroup {
    /// What `attache convert` makes: its flags, then the environment; nil with `--no-transcode`.
    public func settings() throws -> TranscodeSettings? {
        try Settings(flags: flags).read { settings in
            try settings.attache.flag(.noTranscode) ? nil : try TranscodeSettings(reader: settings.attache)
        }
    }
}
