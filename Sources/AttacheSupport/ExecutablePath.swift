#if canImport(Glibc)
import Glibc
#endif

/// The path of `name` in the directory this process's executable is in (how `attache` finds
/// `attache-serve`, and the service its decoder helper `attache-decode`): installed together,
/// they find each other wherever they are installed. Nil when /proc is not there to say.
public func pathBesideThisExecutable(_ name: String) -> String? {
    var buffer = [CChar](repeating: 0, count: 4096)
    let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    guard n > 0 else { return nil }
    let path = String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    guard let slash = path.lastIndex(of: "/") else { return nil }
    return path[..<slash] + "/" + name
}
