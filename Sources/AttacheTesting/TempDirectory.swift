import AttacheSupport
#if canImport(Glibc)
import Glibc
#endif

/// A fresh directory under /tmp for one test.
public func makeTempDirectory() throws -> String {
    var template = Array("/tmp/attache-test-XXXXXX".utf8CString)
    guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
        throw OriginError("mkdtemp failed")
    }
    return String(cString: made)
}

/// Names in a directory (without . and ..), sorted.
public func listDirectory(_ path: String) -> [String] {
    ((try? directoryEntries(path)) ?? []).sorted()
}

extension String {
    /// Every occurrence of `target` replaced (FoundationEssentials-free, for fixtures).
    public func replacingAll(_ target: String, with replacement: String) -> String {
        var out = ""
        var rest = self[...]
        while let r = rest.firstRange(of: target) {
            out += rest[..<r.lowerBound] + replacement
            rest = rest[r.upperBound...]
        }
        return out + rest
    }
}
