import AttacheSupport
import Crypto
import Foundation
import Testing
@testable import AttacheRelay

@Suite struct ProviderTokenTests {
    static func decode(_ part: Substring) -> [UInt8] {
        Base64.decode(part) ?? []
    }

    /// A JWT Apple can check: ES256 over `header.claims`, the key id in the header, the team and the
    /// time in the claims.
    static func verify(_ bearer: String, with key: P256.Signing.PublicKey) -> (kid: String, iss: String, iat: Int)? {
        guard bearer.hasPrefix("bearer ") else { return nil }
        let parts = bearer.dropFirst(7).split(separator: ".")
        guard parts.count == 3,
              let signature = try? P256.Signing.ECDSASignature(rawRepresentation: decode(parts[2])),
              key.isValidSignature(signature, for: Array("\(parts[0]).\(parts[1])".utf8)),
              let header = try? JSONSerialization.jsonObject(with: Data(decode(parts[0]))) as? [String: Any],
              let claims = try? JSONSerialization.jsonObject(with: Data(decode(parts[1]))) as? [String: Any],
              header["alg"] as? String == "ES256",
              let kid = header["kid"] as? String, let iss = claims["iss"] as? String, let iat = claims["iat"] as? Int
        else { return nil }
        return (kid, iss, iat)
    }

    @Test func aTokenIsSignedAndReusedForFiftyMinutesThenRenewed() throws {
        let key = P256.Signing.PrivateKey()
        let token = try ProviderToken(keyPEM: key.pemRepresentation, keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
        let start: Int64 = 1_800_000_000
        let first = try token.authorization(now: start)
        let claims = try #require(Self.verify(first, with: key.publicKey))
        #expect((claims.kid, claims.iss, claims.iat) == ("ABC123DEFG", "DEF123GHIJ", 1_800_000_000))
        #expect(try token.authorization(now: start + 49 * 60) == first)  // Apple: not more often than every 20 min
        let renewed = try token.authorization(now: start + 50 * 60)       // and never older than an hour
        #expect(renewed != first)
        #expect(Self.verify(renewed, with: key.publicKey)?.iat == 1_800_003_000)
        #expect(Self.verify(renewed, with: P256.Signing.PrivateKey().publicKey) == nil)  // the check can fail
    }

    @Test func aKeyThatIsNotP256IsRefused() {
        #expect(throws: (any Error).self) { try ProviderToken(keyPEM: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", keyID: "k", teamID: "t") }
    }
}
