/// Whether two byte strings are equal, in a time that depends only on their lengths, never on where
/// they differ: for secrets (bearer tokens, token hashes) compared with what a client presents.
public func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    var difference = UInt8(a.count == b.count ? 0 : 1)
    for i in 0..<max(a.count, b.count) {
        difference |= (i < a.count ? a[i] : 0) ^ (i < b.count ? b[i] : 0)
    }
    return difference == 0
}
