import AttacheSupport
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A fresh directory under /tmp for one test, removed with everything in it when the test process
/// exits.
///
/// Why at exit and not at the end of the test: what uses the directory (a server, a store, a
/// detached task finishing a write) can outlive the test function, and a test that removed it
/// early would fail for the wrong reason; at exit nothing uses it any more. Without this, every
/// `swift test` left ~30 directories behind (10,000 of them in /tmp after a day's runs).
public func makeTempDirectory() throws -> String {
    var template = Array("/tmp/attache-test-XXXXXX".utf8CString)
    guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
        throw SetupError("mkdtemp failed")
    }
    let path = String(cString: made)
    madeDirectories.withLock { made in
        if made.isEmpty { atexit { for path in madeDirectories.withLock({ $0 }) { removeTree(path) } } }
        made.append(path)
    }
    return path
}

private let madeDirectories = Mutex<[String]>([])

/// rm -rf, for test directories (a file too).
func removeTree(_ path: String) {
    var info = stat()
    guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
        unlink(path)
        return
    }
    ScratchSpace.removeTree(path)
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

/// What a test's set-up could not do (start a server, make a directory), said in a sentence.
public struct SetupError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
