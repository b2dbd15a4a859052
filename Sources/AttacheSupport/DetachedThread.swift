#if canImport(Glibc)
import Glibc
#endif

/// Starts a plain OS thread that runs `body` once. Used for the loops that block in C
/// (curl_multi_poll, accept, decoders) so they never sit on Swift's cooperative pool.
public func startDetachedThread(name: String, _ body: @escaping @Sendable () -> Void) {
    final class Box: Sendable {
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

/// Runs `side` on a second OS thread while the calling thread runs `main`; returns when both
/// have, with both results (the first error, `main`'s before `side`'s). For two independent
/// pieces of one blocking job (a render's display copy and its thumbnail), so that the job takes
/// the longer of the two, not their sum, when a core is free. Without a thread, one after the other.
public func concurrently<A, B>(_ side: () throws -> A, _ main: () throws -> B) throws -> (A, B) {
    // The closures do not escape: the thread is joined before this returns.
    try withoutActuallyEscaping(side) { side in
        let job = SideJob(side)  // held here until after the join: the thread borrows it
        var thread = pthread_t()
        guard pthread_create(&thread, nil, { raw in
            Unmanaged<AnySideJob>.fromOpaque(raw!).takeUnretainedValue().run()
            return nil
        }, Unmanaged.passUnretained(job).toOpaque()) == 0 else {
            return (try side(), try main())
        }
        let mainResult = Result { try main() }
        pthread_join(thread, nil)
        let mainValue = try mainResult.get()
        return (try job.result!.get(), mainValue)
    }
}

/// What `concurrently` hands its thread (a C callback cannot name a generic type).
private class AnySideJob: @unchecked Sendable {
    func run() {}
}

/// Written by the thread, read only after the join.
private final class SideJob<A>: AnySideJob, @unchecked Sendable {
    let body: () throws -> A
    var result: Result<A, any Error>?
    init(_ body: @escaping () throws -> A) { self.body = body }
    override func run() { result = Result { try body() } }
}
