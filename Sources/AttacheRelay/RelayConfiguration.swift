import Attache
import AttacheEnrichment
import AttacheHTTPKit
import AttacheTenants

/// What `attache relay` runs with: where it listens, how (HTTP/2 with prior knowledge in clear
/// text, or TLS with ALPN), and where it forwards.
public struct RelayConfiguration: Sendable {
    /// A certificate chain and its private key, as PEM files: the relay's own (its TLS, ALPN `h2`
    /// and `http/1.1`), or the provider's client certificate it presents to Apple.
    public struct Identity: Sendable {
        public var certificatePath: String
        public var keyPath: String

        public init(certificatePath: String, keyPath: String) {
            self.certificatePath = certificatePath
            self.keyPath = keyPath
        }
    }

    public static let apnsProduction = "https://api.push.apple.com"
    public static let apnsSandbox = "https://api.sandbox.push.apple.com"
    public static let fcm = "https://fcm.googleapis.com"

    public var host: String
    public var port: Int
    /// Nil: HTTP/2 with prior knowledge in clear text (a sidecar on loopback).
    public var tls: Identity?
    /// Where `POST /3/device/…` goes: Apple's production host, its sandbox, or any URL (a double).
    public var apnsUpstream: String
    /// Where `POST /v1/projects/…/messages:send` goes.
    public var fcmUpstream: String
    /// How long the upstream has to answer once the request is forwarded.
    public var upstreamTimeout: Duration
    /// Certificate authorities (PEM) trusted for the upstreams instead of the system's.
    public var upstreamCA: String?
    /// Largest request body: Apple's limit is 4 KB (5 KB for VoIP); an FCM request is larger.
    public var maxBodyBytes: Int
    /// Certificate-based APNs authentication: the provider's client certificate, presented to
    /// Apple on every APNs connection.
    public var apnsCertificate: Identity?
    /// Slow clients over HTTP/1.1 (the time for a request's headers, then its body), the time a
    /// connection with nothing in flight is kept (over both protocols; a relay's clients keep
    /// their connections long: 5 minutes), and the cap on connections open at once.
    public var connections = ConnectionLimits(idleTimeout: .seconds(300))
    /// Connections open at once from one client address; past that, new ones are closed.
    public var maxConnectionsPerAddress = 256

    public init(host: String = "127.0.0.1", port: Int = 8443, tls: Identity? = nil,
                apnsUpstream: String = RelayConfiguration.apnsProduction, fcmUpstream: String = RelayConfiguration.fcm,
                upstreamTimeout: Duration = .seconds(10), maxBodyBytes: Int = 64 * 1024) {
        self.host = host
        self.port = port
        self.tls = tls
        self.apnsUpstream = apnsUpstream
        self.fcmUpstream = fcmUpstream
        self.upstreamTimeout = upstreamTimeout
        self.maxBodyBytes = maxBodyBytes
    }

    /// An upstream is an `http` or `https` URL with a host and, if any, a port.
    public static func isUpstreamURL(_ url: String) -> Bool {
        UpstreamConnections.Origin(url: url) != nil
    }

    /// Whether `url` names this relay's own listener (its port, on its host, or on loopback or
    /// every address when it listens there): forwarding to it would loop. A loop through another
    /// name is cut by the `via` field at its first turn.
    public func isOwnListener(_ url: String) -> Bool {
        guard let origin = UpstreamConnections.Origin(url: url), origin.port == port else { return false }
        // Names of one listener: connecting to the unspecified address reaches loopback.
        let same: [Set<String>] = [["127.0.0.1", "localhost", "0.0.0.0"], ["::1", "localhost", "::"]]
        let everywhere = host == "0.0.0.0" || host == "::"
        let loopback = origin.host.hasPrefix("127.") || ["localhost", "::1", "0.0.0.0", "::"].contains(origin.host)
        return origin.host == host || everywhere && loopback || same.contains { $0.contains(host) && $0.contains(origin.host) }
    }

    struct InvalidUpstream: Error, CustomStringConvertible {
        var url: String
        var description: String { "not an upstream URL: \(url)" }
    }
}

/// The relay's own credentials, live objects beside its configuration: with them, requests go to
/// the provider under the relay's authorization instead of the client's.
public struct ProviderCredentials: Sendable {
    /// When the relay holds the team's key: every APNs request is sent with the relay's own
    /// provider token. Nil: the client's `authorization` goes through.
    public var apns: ProviderToken?
    /// When the relay holds a service account's key: every FCM request is sent with the OAuth
    /// token it buys. Nil: the client's `authorization` goes through.
    public var fcm: ServiceAccountToken?

    public init(apns: ProviderToken? = nil, fcm: ServiceAccountToken? = nil) {
        self.apns = apns
        self.fcm = fcm
    }
}
