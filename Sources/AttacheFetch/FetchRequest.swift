import Synchronization

/// What the prefix inspector says after seeing the first bytes of a body.
public enum PrefixVerdict: Sendable {
    /// Go on, with the byte cap for the kind the bytes turned out to be.
    case accept(maxBytes: Int)
    /// Stop now, with the inspector's own error (the fetch fails with code `rejected`, carrying it).
    case reject(any Error & Sendable)
}

public struct FetchRequest: Sendable {
    public var url: String
    /// Cap on received bytes until the prefix inspector has chosen one.
    public var maxBytes: Int
    /// Bytes handed to `inspectPrefix` once received (or the whole body, if shorter).
    public var prefixLength: Int
    /// Sees the first bytes as they arrive, so a wrong kind or an HTML error page stops early.
    public var inspectPrefix: (@Sendable ([UInt8]) -> PrefixVerdict)?
    /// Receives the transfer's timings when it ends, however it ends (cancelled ones too).
    public var trace: FetchTrace?
    /// The streaming form: when set, every chunk of the body is handed here as it arrives and
    /// nothing is kept (the result's `body` is empty, its `bytes` still counts what came). It runs
    /// on the engine's thread between socket reads, so it must be quick and never block; return
    /// false to stop the transfer (it then fails with reason `fetch-failed`, "stopped by the
    /// consumer"). Byte caps and the prefix inspector apply as for kept bodies.
    public var stream: (@Sendable (UnsafeRawBufferPointer) -> Bool)?
    /// GET (media), HEAD and PUT for an object store, POST for a request the relay forwards.
    public var method: Method = .get
    /// Extra request headers, `Name: value`; `Name:` removes one curl would add of its own.
    public var headers: [String] = []
    /// The body of a PUT or a POST.
    public var upload: Upload?
    /// Signs the request with AWS Signature V4 (libcurl's `CURLOPT_AWS_SIGV4`).
    public var signature: AWSSignature?
    /// Media follows redirects (each hop judged); an object store's answer is final.
    public var followRedirects = true
    /// The hosts this request may reach, by name, on its first URL and every redirect (a tenant's
    /// media hosts); nil: any host (the address policy judges every connection either way).
    public var allowedHosts: HostAllowlist?
    /// A budget shared with other transfers (a tenant's daily download quota): each chunk's bytes
    /// are claimed from it as they arrive, before they are kept; a claim refused stops the
    /// transfer (code `quotaExceeded`). Called on the engine's thread: quick, never blocking.
    public var allowance: (@Sendable (_ bytes: Int) -> Bool)?

    public enum Method: String, Sendable {
        case get = "GET", head = "HEAD", put = "PUT", post = "POST"
    }

    public enum Upload: Sendable {
        case bytes([UInt8])
        /// A file sent as curl asks for it, never read whole into memory (a spilled body of tens
        /// of MB). Opened when the transfer starts, without following a symbolic link; its size
        /// then is the request's Content-Length.
        case file(String)
    }

    public init(
        url: String,
        maxBytes: Int = 50 * 1024 * 1024,
        prefixLength: Int = 512,
        inspectPrefix: (@Sendable ([UInt8]) -> PrefixVerdict)? = nil
    ) {
        self.url = url
        self.maxBytes = maxBytes
        self.prefixLength = prefixLength
        self.inspectPrefix = inspectPrefix
        self.trace = nil
        self.stream = nil
    }
}

/// Stage times of one transfer, in milliseconds from its start (curl's own clock).
public struct FetchTimings: Sendable, Equatable {
    public var dns: Double = 0
    public var connect: Double = 0
    public var tls: Double = 0
    public var firstByte: Double = 0
    public var total: Double = 0
    public init() {}
}

public struct FetchResult: Sendable {
    public var status: Int
    public var finalURL: String
    public var contentType: String?
    public var bytes: Int
    public var redirects: Int
    public var connectedIP: String?
    /// Connections this transfer had to open (0 when it reused one).
    public var newConnections: Int
    public var timings: FetchTimings
    public var body: FetchedBody
}

/// Where a transfer leaves its timings when it ends, for callers that want them on failure too
/// (a timeline of a payload whose media never arrived).
public final class FetchTrace: Sendable {
    private let value = Mutex<FetchTimings?>(nil)
    public init() {}
    public var timings: FetchTimings? { value.withLock { $0 } }
    func record(_ timings: FetchTimings) { value.withLock { $0 = timings } }
}

extension FetchTimings {
    /// curl's times are cumulative from the transfer's start; these are each stage's own.
    public var stages: (dns: Double, connect: Double, tls: Double, firstByte: Double, download: Double) {
        let connected = max(connect, tls)
        let waited = firstByte > 0 ? firstByte : total  // no byte yet: waiting until the end
        return (dns, max(0, connect - dns), tls > 0 ? max(0, tls - connect) : 0,
                max(0, waited - connected), firstByte > 0 ? max(0, total - max(firstByte, connected)) : 0)
    }
}

/// What libcurl needs to sign a request for S3 (or anything speaking its API): the keys, the
/// region, and a session token when the keys are temporary. The payload's hash goes in an
/// `x-amz-content-sha256` header, which libcurl signs as given.
public struct AWSSignature: Sendable {
    public var accessKey: String
    public var secretKey: String
    public var sessionToken: String?
    public var region: String
    public var service: String

    public init(accessKey: String, secretKey: String, sessionToken: String? = nil, region: String, service: String = "s3") {
        self.accessKey = accessKey
        self.secretKey = secretKey
        self.sessionToken = sessionToken
        self.region = region
        self.service = service
    }
}
