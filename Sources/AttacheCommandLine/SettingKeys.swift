import ArgumentParser

/// Every setting's name, spelt once: the key under `attache` that the configuration tree reads,
/// which gives the variable and the flag. Grouped as the tree is.
extension SettingKey {
    // The process (the long-running commands).
    public static let logFormat: SettingKey = "log-format"
    public static let configFile: SettingKey = "config-file"
    public static let host: SettingKey = "host"
    public static let port: SettingKey = "port"
    public static let tokens: SettingKey = "tokens"
    public static let tenantsFile: SettingKey = "tenants-file"
    public static let metricsPort: SettingKey = "metrics-port"

    // A door's connections (the service, the relay).
    public static let maxInFlight: SettingKey = "max-in-flight"
    public static let idleTimeout: SettingKey = "idle-timeout"
    public static let headerTimeout: SettingKey = "header-timeout"
    public static let bodyTimeout: SettingKey = "body-timeout"
    public static let maxConnections: SettingKey = "max-connections"
    public static let maxConnectionsPerAddress: SettingKey = "max-connections-per-address"

    // The enrichment: its deadline and what it emits.
    public static let deadline: SettingKey = "deadline"
    public static let maxDeadline: SettingKey = "max-deadline"
    public static let onTimeout: SettingKey = "on-timeout"
    public static let maxPayloadBytes: SettingKey = "max-payload-bytes"
    public static let attachmentsKey: SettingKey = "attachments-key"

    // Its fetches.
    public static let allowAddresses: SettingKey = "allow-addresses"
    public static let proxy: SettingKey = "proxy"

    // Its media.
    public static let thumbnailSize: SettingKey = "thumbnail-size"
    public static let displaySize: SettingKey = "display-size"
    public static let maxAttachments: SettingKey = "max-attachments"
    public static let mediaKeys: SettingKey = "media-keys"
    public static let noDefaultMediaKeys: SettingKey = "no-default-media-keys"
    public static let noAndroidCopy: SettingKey = "no-android-copy"
    public static let poster: SettingKey = "poster"
    public static let maxMediaJobs: SettingKey = "max-media-jobs"
    public static let isolation: SettingKey = "isolation"
    public static let decoders: SettingKey = "decoders"

    // Its conversions.
    public static let noTranscode: SettingKey = "no-transcode"
    public static let movieMaxBytes: SettingKey = "movie-max-bytes"
    public static let soundMaxBytes: SettingKey = "sound-max-bytes"
    public static let movieKeep: SettingKey = "movie-keep"
    public static let movieEdge: SettingKey = "movie-edge"
    public static let transcodePreset: SettingKey = "transcode-preset"
    public static let conversionWait: SettingKey = "conversion-wait"

    // Its cache.
    public static let cacheTTL: SettingKey = "cache-ttl"
    public static let cacheEntries: SettingKey = "cache-entries"
    public static let warmThrough: SettingKey = "warm-through"

    // Its store.
    public static let store: SettingKey = "store"
    public static let mediaDir: SettingKey = "media-dir"
    public static let publicBaseURL: SettingKey = "public-base-url"

    // The relay's listener, upstreams and credentials.
    public static let tlsCertificate: SettingKey = "tls-certificate"
    public static let tlsKey: SettingKey = "tls-key"
    public static let apnsUpstream: SettingKey = "apns-upstream"
    public static let fcmUpstream: SettingKey = "fcm-upstream"
    public static let upstreamTimeout: SettingKey = "upstream-timeout"
    public static let upstreamCA: SettingKey = "upstream-ca"
    public static let apnsCertificate: SettingKey = "apns-certificate"
    public static let apnsCertificateKey: SettingKey = "apns-certificate-key"
    public static let apnsKey: SettingKey = "apns-key"
    public static let apnsKeyID: SettingKey = "apns-key-id"
    public static let apnsTeamID: SettingKey = "apns-team-id"
    public static let fcmServiceAccount: SettingKey = "fcm-service-account"

    // The lab's samples and bounds.
    public static let samples: SettingKey = "samples"
    public static let maxRuns: SettingKey = "max-runs"
    public static let maxSweepCells: SettingKey = "max-sweep-cells"

    // The worker's NATS connection and streams.
    public static let natsURL: SettingKey = "nats-url"
    public static let natsUser: SettingKey = "nats-user"
    public static let natsPassword: SettingKey = "nats-password"
    public static let natsToken: SettingKey = "nats-token"
    public static let natsCredentials: SettingKey = "nats-credentials"
    public static let natsCA: SettingKey = "nats-ca"
    public static let natsTLS: SettingKey = "nats-tls"
    public static let inputStream: SettingKey = "input-stream"
    public static let inputSubject: SettingKey = "input-subject"
    public static let consumer: SettingKey = "consumer"
    public static let outputStream: SettingKey = "output-stream"
    public static let outputSubject: SettingKey = "output-subject"
    public static let concurrency: SettingKey = "concurrency"
    public static let ackWait: SettingKey = "ack-wait"
    public static let maxDeliver: SettingKey = "max-deliver"
}

extension NameSpecification {
    /// A flag named by its setting.
    public static func setting(_ key: SettingKey) -> NameSpecification { [.setting(key)] }
}

extension NameSpecification.Element {
    /// A flag named by its setting (beside a shorter name: `--token` for `tokens`).
    public static func setting(_ key: SettingKey) -> NameSpecification.Element { .customLong(key.name) }
}

extension ArgumentHelp {
    /// A flag's help: what the setting is, then its variable and anything more (its default).
    public static func setting(_ key: SettingKey, _ summary: String, _ detail: String? = nil) -> ArgumentHelp {
        ArgumentHelp("\(summary) [\(key.variable)\(detail.map { ", " + $0 } ?? "")].")
    }
}
