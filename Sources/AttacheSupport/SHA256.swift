import CDigest

/// SHA-256 by OpenSSL (libcrypto's SHA256_* functions, loaded on first use: CDigest), incremental or
/// over a whole buffer (a mapped body), without its hand-written predecessor's copy to pad it.
/// One hasher per body; not for use from two threads at once. libcrypto failing (missing, or out
/// of memory) is an error for the caller, never a crash.
public final class SHA256: @unchecked Sendable {
    private let hasher: OpaquePointer
    private var digest: [UInt8]?

    public struct Failure: Error, CustomStringConvertible {
        public var reason = "libcrypto could not compute a SHA-256"
        public var description: String { reason }
    }

    public init() throws {
        var message = [CChar](repeating: 0, count: 160)
        guard let hasher = attache_sha256_new(&message, message.count) else {
            throw Failure(reason: String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        self.hasher = hasher
    }

    deinit {
        attache_sha256_free(hasher)
    }

    public func update(_ bytes: UnsafeRawBufferPointer) {
        precondition(digest == nil, "SHA256.update after finalize")
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        _ = attache_sha256_update(hasher, base, bytes.count)
    }

    public func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// The 32-byte digest (computed once; later calls return it again).
    public func finalize() throws -> [UInt8] {
        if let digest { return digest }
        var out = [UInt8](repeating: 0, count: 32)
        guard attache_sha256_final(hasher, &out) == 1 else { throw Failure() }
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
