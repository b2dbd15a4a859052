import AttachePayload
import AttacheSupport
import Crypto
import NIOCore
import NIOSSL
import _CryptoExtras
#if canImport(Glibc)
import Glibc
#endif

/// FCM's credential when the relay holds it: a Google service account's key (the JSON file the
/// Firebase console gives) buys an OAuth 2 access token from the account's `token_uri` (a JWT
/// signed RS256 with the key, RFC 7523), which FCM takes as `Authorization: Bearer …`. A token is
/// bought on first use, reused, and bought again five minutes before it expires (Google's last an
/// hour); requests that arrive while one is being bought wait for that one purchase.
public actor ServiceAccountToken {
    public struct Invalid: Error, CustomStringConvertible {
        public var description: String
    }

    /// The token endpoint refused, or answered something that is not a token.
    struct NotIssued: Error, CustomStringConvertible {
        var description: String
    }

    static let scope = "https://www.googleapis.com/auth/firebase.messaging"
    /// How long before its expiry a token is replaced.
    static let margin: Int64 = 5 * 60

    let email: String
    let key: _RSA.Signing.PrivateKey
    let tokenURL: String
    private let endpoint: UpstreamConnections
    private var current: (bearer: String, expires: Int64)?
    private var buying: Task<(bearer: String, expires: Int64), any Error>?

    /// `json`: the service account's key file; `caFile`: the authorities trusted for its
    /// `token_uri` instead of the system's.
    public init(json: [UInt8], caFile: String? = nil) throws {
        guard let account = try? JSONParser(maxBytes: 1 << 20).parse(json).objectValue,
              let email = account["client_email"]?.stringValue,
              let pem = account["private_key"]?.stringValue
        else { throw Invalid(description: "not a service account key: client_email and private_key are required") }
        do {
            key = try _RSA.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw Invalid(description: "the service account's private_key is not an RSA key in PEM")
        }
        self.email = email
        tokenURL = account["token_uri"]?.stringValue ?? "https://oauth2.googleapis.com/token"
        guard let origin = UpstreamConnections.Origin(url: tokenURL) else {
            throw Invalid(description: "the service account's token_uri is not an http(s) URL: \(tokenURL)")
        }
        endpoint = try UpstreamConnections(origin: origin, tls: .upstream(caFile: caFile), perLoop: 1)
    }

    /// The `authorization` value to send now.
    public func authorization(now: Int64 = Int64(time(nil))) async throws -> String {
        if let current, now < current.expires - Self.margin { return current.bearer }
        if let buying { return try await buying.value.bearer }
        let purchase = Task { try await self.buy(now: now) }
        buying = purchase
        defer { buying = nil }
        let bought = try await purchase.value
        current = bought
        return bought.bearer
    }

    /// The assertion Google's token endpoint takes: the account, the scope, this endpoint as the
    /// audience, one hour.
    func assertion(now: Int64) throws -> String {
        let claims = #"{"iss":"\#(email)","scope":"\#(Self.scope)","aud":"\#(tokenURL)","iat":\#(now),"exp":\#(now + 3600)}"#
        return try JSONWebToken.compact(header: #"{"alg":"RS256","typ":"JWT"}"#, claims: claims) {
            Array(try key.signature(for: $0, padding: .insecurePKCS1v1_5).rawRepresentation)
        }
    }

    private func buy(now: Int64) async throws -> (bearer: String, expires: Int64) {
        let form = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=" + (try assertion(now: now))
        let answer = try await endpoint.send(
            .init(path: endpoint.origin.pathPrefix.isEmpty ? "/" : endpoint.origin.pathPrefix,
                  fields: [HeaderField(name: "content-type", value: "application/x-www-form-urlencoded")], body: ByteBuffer(string: form)),
            deadline: .now() + .seconds(10)
        ).get()
        let body = try? JSONParser(maxBytes: 1 << 20).parse(Array(buffer: answer.body)).objectValue
        guard answer.status == 200, let token = body?["access_token"]?.stringValue else {
            // Google's error names the problem (`invalid_grant`, …); the token never reaches a log.
            let reason = body?["error"]?.stringValue ?? "status \(answer.status)"
            throw NotIssued(description: "the token endpoint did not issue a token: \(reason)")
        }
        let lifetime = body?["expires_in"]?.doubleValue.map { Int64($0) } ?? 3600
        return ("Bearer " + token, now + lifetime)
    }

    public func shutdown() {
        endpoint.shutdown()
    }
}
