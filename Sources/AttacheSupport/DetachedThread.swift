#if canImport(Glibc)
import Glibc
#endif

/// Starts a plain OS thread that runs `body` once. Used for the loops that block in C
/// (curl_multi_poll, accept, decoders) so they never sit on Swift's cooperative pool.
public func startDetachedThread(name: String, _ body: @escaping @Sendable () -> Void) {
    final class Box: @unchecked Sendable {  // immutable after init
        let body: @Sendable () -> Void
        let name: String
        init(_ name: String, _ body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }
    let box = Unmanaged.passRetained(Box(name, body)).toOpaque()
    var thread = pthread_t()
    let rc = pthread_create(&thread, nil, { raw in
        let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
        nameThisThread(box.name)
        box.body()
        return nil
    }, box)
    if rc == 0 {
        pthread_detach(thread)
    } else {
        // No thread could be made: run inline rather than lose the work.
        Unmanaged<Box>.fromOpaque(box).takeRetainedValue().body()
    }
}

/// Names the calling thread (what pthread_setname_np does, which Swift's Glibc module does not
/// export: it is a GNU extension).
private func nameThisThread(_ name: String) {
    let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
    guard fd >= 0 else { return }
    defer { close(fd) }
    let bytes = Array(name.utf8.prefix(15))
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
}
