import COpenSSL

/// SHA-256 by OpenSSL (libcrypto's EVP interface), fed as bytes arrive: content-addressed names
/// cost no second pass over a body, and none of its hand-written predecessor's copy to pad it.
/// One hasher per body; not for use from two threads at once.
public final class SHA256: @unchecked Sendable {
    private let context: OpaquePointer
    private var digest: [UInt8]?

    public init() {
        guard let context = EVP_MD_CTX_new(), EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1 else {
            fatalError("libcrypto cannot make a SHA-256 context")  // only out of memory
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
    public func finalize() -> [UInt8] {
        if let digest { return digest }
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        EVP_DigestFinal_ex(context, &out, &length)
        digest = out
        return out
    }

    public var hex: String { Self.hex(digest: finalize()) }

    public static func hash(_ data: [UInt8]) -> [UInt8] {
        let hasher = SHA256()
        hasher.update(data)
        return hasher.finalize()
    }

    public static func hex(_ data: [UInt8]) -> String {
        hex(digest: hash(data))
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
