import CDigest

/// SHA-256 by OpenSSL (libcrypto's SHA256_* functions, loaded on first use: CDigest), incremental or
/// over a whole buffer (a mapped body). A value: a copy goes on from where the original was, and
/// each may be used on its own thread. libcrypto failing (missing) is an error for the caller,
/// never a crash. (Named apart from swift-crypto's `SHA256`, which the relay's code imports too.)
public struct SHA256Hasher: Sendable {
    private var state = attache_sha256()

    public struct Failure: Error, CustomStringConvertible {
        public var reason = "libcrypto could not compute a SHA-256"
        public var description: String { reason }
    }

    public init() throws {
        var message = [CChar](repeating: 0, count: 160)
        guard attache_sha256_init(&state, &message, message.count) == 1 else {
            throw Failure(reason: String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
    }

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        _ = attache_sha256_update(&state, base, bytes.count)
    }

    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// The 32-byte digest of what was taken in so far (the hasher can go on taking more).
    public func finalize() throws -> [UInt8] {
        var spent = state
        var out = [UInt8](repeating: 0, count: 32)
        guard attache_sha256_final(&spent, &out) == 1 else { throw Failure() }
        return out
    }

    public var hex: String {
        get throws { Self.hex(digest: try finalize()) }
    }

    public static func hash(_ data: UnsafeRawBufferPointer) throws -> [UInt8] {
        var hasher = try SHA256Hasher()
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
