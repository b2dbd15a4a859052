import AttacheSupport
import Crypto
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Apple's provider token, made by the relay when it holds the team's key: an ES256 JWT, header
/// `{"alg":"ES256","kid":KEY_ID}`, claims `{"iss":TEAM_ID,"iat":SECONDS}`, sent as
/// `authorization: bearer …`. One token is reused for 50 minutes: Apple refuses a token older than
/// an hour, and answers TooManyProviderTokenUpdates when a provider refreshes more often than every
/// 20 minutes.
public final class ProviderToken: Sendable {
    /// How long a token is reused: between Apple's 20 minutes and one hour.
    public static let lifetime: Int64 = 50 * 60

    let key: P256.Signing.PrivateKey
    let keyID: String
    let teamID: String
    private let current = Mutex<(bearer: String, issuedAt: Int64)?>(nil)

    /// `pem`: the `.p8` file Apple gives (a PKCS#8 P-256 private key).
    public init(keyPEM pem: String, keyID: String, teamID: String) throws {
        key = try P256.Signing.PrivateKey(pemRepresentation: pem)
        self.keyID = keyID
        self.teamID = teamID
    }

    /// The `authorization` value to send now (`bearer …`), made anew once the last is 50 minutes old.
    public func authorization(now: Int64 = Int64(time(nil))) throws -> String {
        try current.withLock { current in
            if let current, now - current.issuedAt < Self.lifetime, now >= current.issuedAt { return current.bearer }
            let bearer = "bearer " + (try token(issuedAt: now))
            current = (bearer, now)
            return bearer
        }
    }

    func token(issuedAt: Int64) throws -> String {
        try JSONWebToken.compact(header: #"{"alg":"ES256","kid":"\#(keyID)"}"#, claims: #"{"iss":"\#(teamID)","iat":\#(issuedAt)}"#) {
            Array(try key.signature(for: $0).rawRepresentation)
        }
    }
}

/// A JSON Web Token in its compact form (RFC 7519): base64url header, claims and signature.
enum JSONWebToken {
    static func compact(header: String, claims: String, sign: ([UInt8]) throws -> [UInt8]) rethrows -> String {
        let input = Base64.urlEncode(Array(header.utf8)) + "." + Base64.urlEncode(Array(claims.utf8))
        return input + "." + Base64.urlEncode(try sign(Array(input.utf8)))
    }
}
