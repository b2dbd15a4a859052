import AttacheFetch
import AttacheSupport

/// Objects in an S3-compatible bucket, `PREFIX<sha256>.<ext>`, uploaded with a PUT signed by
/// libcurl's AWS Signature V4 (the payload's hash, known already, is the signed
/// `x-amz-content-sha256`), with their Content-Type and `Cache-Control: immutable`. An object
/// already there (a HEAD says so) is not uploaded again. Devices read it from the public base URL
/// (a CDN, or the bucket's own URL). Store traffic goes through a fetch engine of its own: the
/// media address policy does not apply (the endpoint may well be private), and its transfers end
/// by the payload's deadline like every other.
public struct S3Store: MediaStore {
    /// `s3://BUCKET/PREFIX`.
    public struct Location: Sendable, Equatable {
        public var bucket: String
        /// Empty, or ending in `/`.
        public var prefix: String

        public init?(_ text: String) {
            guard text.hasPrefix("s3://") else { return nil }
            let rest = text.dropFirst(5)
            let bucket = rest.prefix { $0 != "/" }
            guard !bucket.isEmpty, bucket.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "." }) else { return nil }
            self.bucket = String(bucket)
            let prefix = rest.dropFirst(bucket.count).drop { $0 == "/" }
            self.prefix = prefix.isEmpty || prefix.hasSuffix("/") ? String(prefix) : prefix + "/"
        }
    }

    /// Where the bucket is and who writes to it.
    public struct Endpoint: Sendable {
        /// `https://s3.REGION.amazonaws.com`, or a custom endpoint (addressed path-style).
        public var url: String
        public var signature: AWSSignature

        public init(url: String, signature: AWSSignature) {
            self.url = url.withoutTrailingSlash
            self.signature = signature
        }

        /// From the standard AWS environment: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
        /// AWS_SESSION_TOKEN, AWS_REGION or AWS_DEFAULT_REGION (default us-east-1),
        /// AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL.
        public static func fromEnvironment(_ variable: (String) -> String?) throws -> Endpoint {
            guard let key = variable("AWS_ACCESS_KEY_ID"), let secret = variable("AWS_SECRET_ACCESS_KEY") else {
                throw StoreError(.misconfigured, "an s3:// store needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
            }
            let region = variable("AWS_REGION") ?? variable("AWS_DEFAULT_REGION") ?? "us-east-1"
            let url = variable("AWS_ENDPOINT_URL_S3") ?? variable("AWS_ENDPOINT_URL") ?? "https://s3.\(region).amazonaws.com"
            guard url.hasPrefix("http://") || url.hasPrefix("https://") else {
                throw StoreError(.misconfigured, "the S3 endpoint must be an http(s) URL, not \(url)")
            }
            return Endpoint(url: url, signature: AWSSignature(accessKey: key, secretKey: secret,
                                                              sessionToken: variable("AWS_SESSION_TOKEN"), region: region))
        }
    }

    public let location: Location
    public let endpoint: Endpoint
    /// Device URLs are this + `/` + the object's key.
    public let publicBaseURL: String
    let engine: FetchEngine

    /// `engine` must be the store's own (see `makeEngine`), not the media engine.
    public init(location: Location, endpoint: Endpoint, publicBaseURL: String?, engine: FetchEngine) {
        self.location = location
        self.endpoint = endpoint
        self.publicBaseURL = (publicBaseURL ?? "\(endpoint.url)/\(location.bucket)").withoutTrailingSlash
        self.engine = engine
    }

    /// A fetch engine for store traffic: every address allowed (the endpoint is configured, not
    /// taken from a payload), no redirects followed, no proxy.
    public static func makeEngine(tempDirectory: String) throws -> FetchEngine {
        try FetchEngine(configuration: .init(
            policy: .anyAddress, tempDirectory: tempDirectory
        ))
    }

    public var urlBase: String { "\(publicBaseURL)/\(location.prefix)" }

    func objectURL(_ key: String) -> String { "\(endpoint.url)/\(location.bucket)/\(key)" }

    public func put(_ bytes: [UInt8], fileExtension: String, sha256: String, file: String?,
                    deadline: ContinuousClock.Instant) async throws -> StoredMedia {
        let key = "\(location.prefix)\(sha256).\(fileExtension)"
        let stored = StoredMedia(name: "\(sha256).\(fileExtension)", url: "\(publicBaseURL)/\(key)")
        if try await exists(key, deadline: deadline) { return stored }
        var request = signed(objectURL(key), .put, payloadSHA256: sha256)
        // A body spilled to a file is sent from it in curl's pieces, not from a copy in memory.
        request.upload = file.map { .file($0) } ?? .bytes(bytes)
        request.headers += [
            "Content-Type: \(StoredMedia.contentTypes[fileExtension] ?? "application/octet-stream")",
            "Cache-Control: \(StoredMedia.cacheControl)",
        ]
        do {
            let result = try await engine.fetch(request, deadline: deadline)
            // S3 answers a PUT with 200 once the object is durably stored; anything else (a 3xx
            // is not followed) is no confirmation.
            guard result.status == 200 else { throw StoreError(.refused, "PUT \(key): HTTP \(result.status)", key: key, status: result.status) }
        } catch let error as FetchError {
            throw StoreError(error, "PUT", key: key)
        }
        return stored
    }

    public func record(named name: String, deadline: ContinuousClock.Instant) async -> [UInt8]? {
        let request = signed(objectURL("\(location.prefix)results/\(name)"), .get, payloadSHA256: Self.emptySHA256)
        guard let result = try? await engine.fetch(request, deadline: deadline), result.status == 200 else { return nil }
        return try? result.body.readAll()
    }

    public func putRecord(_ bytes: [UInt8], named name: String, deadline: ContinuousClock.Instant) async throws {
        let key = "\(location.prefix)results/\(name)"
        var request = signed(objectURL(key), .put, payloadSHA256: try SHA256Hasher.hex(bytes))
        request.upload = .bytes(bytes)
        request.headers.append("Content-Type: application/json")
        do {
            let result = try await engine.fetch(request, deadline: deadline)
            guard result.status == 200 else { throw StoreError(.refused, "PUT \(key): HTTP \(result.status)", key: key, status: result.status) }
        } catch let error as FetchError {
            throw StoreError(error, "PUT", key: key)
        }
    }

    /// Whether the object is there (HEAD: 200 yes, 404 no, anything else an error).
    func exists(_ key: String, deadline: ContinuousClock.Instant) async throws -> Bool {
        do {
            let result = try await engine.fetch(signed(objectURL(key), .head, payloadSHA256: Self.emptySHA256), deadline: deadline)
            guard result.status == 200 else { throw StoreError(.refused, "HEAD \(key): HTTP \(result.status)", key: key, status: result.status) }
            return true
        } catch let error as FetchError where error.status == 404 {
            return false
        } catch let error as FetchError {
            throw StoreError(error, "HEAD", key: key)
        }
    }

    /// The bucket answers a signed HEAD within 2 s.
    public func unavailability() async -> String? {
        do {
            let result = try await engine.fetch(signed("\(endpoint.url)/\(location.bucket)", .head, payloadSHA256: Self.emptySHA256),
                                                deadline: .now + .seconds(2))
            return result.status == 200 ? nil : "bucket answered HTTP \(result.status)"
        } catch {
            return "bucket unreachable: \(error)"
        }
    }

    /// SHA-256 of no bytes: the payload hash of HEAD and GET.
    static let emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    private func signed(_ url: String, _ method: FetchRequest.Method, payloadSHA256: String) -> FetchRequest {
        var request = FetchRequest(url: url, maxBytes: 1 << 20)
        request.method = method
        request.signature = endpoint.signature
        request.followRedirects = false
        request.headers = ["x-amz-content-sha256: \(payloadSHA256)"]
        return request
    }
}

extension StoreError {
    /// A request to the object store that did not complete: refused when the store answered with
    /// an error status, else unreachable (or out of time).
    init(_ error: FetchError, _ method: String, key: String) {
        let code: Code = error.code == .timeout ? .deadlinePassed : error.status != nil ? .refused : .unreachable
        self.init(code, "\(method) \(key): \(error)", key: key, status: error.status)
    }
}
