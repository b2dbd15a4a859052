import COpenSSL

/// SHA-256 by OpenSSL (libcrypto's EVP interface), incremental or over a whole buffer (a mapped
/// body), without its hand-written predecessor's copy to pad it.
/// One hasher per body; not for use from two threads at once. libcrypto failing (it can only run
/// out of memory here) is an error for the caller, never a crash.
public final class SHA256: @unchecked Sendable {
    private let context: OpaquePointer
    private var digest: [UInt8]?

    public struct Failure: Error, CustomStringConvertible {
        public var description: String { "libcrypto could not compute a SHA-256" }
    }

    public init() throws {
        guard let context = EVP_MD_CTX_new() else { throw Failure() }
        guard EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1 else {
            EVP_MD_CTX_free(context)
            throw Failure()
        }
        self.context = context
    }

    deinit {
        EVP_MD_CTX_free(context)
    }

    public func update(_ bytes: UnsafeRawBufferPointer) {
        precondition(digest == nil, "SHA256.update after finalize")
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        EVP_DigestUpdate(context, base, bytes.count)
    }

    public func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// The 32-byte digest (computed once; later calls return it again).
    public func finalize() throws -> [UInt8] {
        if let digest { return digest }
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        guard EVP_DigestFinal_ex(context, &out, &length) == 1, length == 32 else { throw Failure() }
        digest = out
        return out
    }

    public var hex: String {
        get throws { Self.hex(digest: try finalize()) }
    }

    public static func hash(_ data: UnsafeRawBufferPointer) throws -> [UInt8] {
        let hasher = try SHA256()
        hasher.update(data)
        return try hasher.finalize()
    }

    public static func hash(_ data: [UInt8]) throws -> [UInt8] {
        try data.withUnsafeBytes { try hash($0) }
    }

    public static func hex(_ data: UnsafeRawBufferPointer) throws -> String {
        hex(digest: try hash(data))
    }

    public static func hex(_ data: [UInt8]) throws -> String {
        hex(digest: try hash(data))
    }

    static func hex(digest: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(64)
        for byte in digest {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 15)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
