import AttacheMedia
internal import CSpawn
import AttachePayload
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Why a helper could not be started, or why isolation cannot be used at all.
/// Why the decoder pool could not decode in a helper: a code a caller can act on, and the words.
public struct IsolationError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// No helper could be started (the executable missing, no socket, no process).
        case cannotStart = "cannot-start"
        /// A helper started but did not say it was ready in its sandbox (not a helper, or its
        /// sandbox refused: a kernel without seccomp, limits the system will not grant).
        case notReady = "not-ready"
        /// The helper went away in the middle of a job.
        case helperGone = "helper-gone"
        /// The pool was stopped.
        case stopped
    }

    public let code: Code
    public let description: String
    init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }
}

/// One `attache-decode` process and this side of its socket. Driven by one pool thread; `kill()`
/// may come from any thread (a deadline), and never reaches a process id once it was collected
/// (and could be another process's).
final class HelperProcess: @unchecked Sendable {  // jobs/cpuMs: the driving thread's; the rest behind `life`
    let pid: pid_t
    let channel: FrameChannel
    private(set) var jobs = 0
    private(set) var cpuMs = 0
    private struct Life {
        var closed = false
        var status: Int32?
    }
    private let life = Mutex(Life())

    /// Starts a helper and waits (up to `within`) for it to say it is ready, sandboxed.
    init(path: String, arguments: [String], within: Duration) throws {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
            throw IsolationError(.cannotStart, "socketpair: \(String(cString: strerror(errno)))")
        }
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let rc = attache_spawn_helper(path, argv, fds[1], &pid)
        // Only the helper holds its end now: when it exits, reads here see the end of the stream.
        close(fds[1])
        guard rc == 0 else {
            close(fds[0])
            throw IsolationError(.cannotStart, "cannot start \(path): \(String(cString: strerror(rc)))")
        }
        self.pid = pid
        channel = FrameChannel(fd: fds[0], useSend: true, maxBytes: 512 << 20)
        try awaitReady(within: within)
    }

    private func awaitReady(within: Duration) throws {
        var timeout = timeval(tv_sec: Int(within.seconds), tv_usec: 0)
        let size = socklen_t(MemoryLayout<timeval>.size)
        setsockopt(channel.fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, size)
        let hello: WireFrame?
        do {
            hello = try channel.read()
        } catch {
            stop()
            throw IsolationError(.notReady, "attache-decode did not start: \(error) (\(terminationDescription))")
        }
        var none = timeval()
        setsockopt(channel.fd, SOL_SOCKET, SO_RCVTIMEO, &none, size)
        guard let hello, hello.header["ready"] == .bool(true) else {
            let message = hello?.header["message"]?.stringValue ?? "it ended before saying it was ready"
            stop()
            throw IsolationError(.notReady, "attache-decode could not sandbox itself: \(message) (\(terminationDescription))")
        }
    }

    /// Sends one job and waits for its answer; throws when the helper dies on the way.
    func exchange(_ frame: WireFrame) throws -> WireFrame {
        try channel.write(frame)
        guard let reply = try channel.read() else { throw IsolationError(.helperGone, "the helper closed its socket") }
        jobs += 1
        if case .number(let text)? = reply.header["cpu_ms"], let cpu = Int(text) { cpuMs = cpu }
        return reply
    }

    func kill() {
        life.withLock { l in
            if l.status == nil { _ = Glibc.kill(pid, SIGKILL) }
        }
    }

    /// Closes the socket (an idle helper exits at once), kills it, and collects its status.
    /// Idempotent.
    func stop() {
        let close = life.withLock { l -> Bool in
            defer { l.closed = true }
            return !l.closed
        }
        if close { Glibc.close(channel.fd) }
        kill()
        wait()
    }

    /// Whether the process has ended (killed while idle, say), without collecting it.
    var hasExited: Bool {
        var info = siginfo_t()
        return waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info._sifields._sigchld.si_pid == pid
    }

    /// Waits for the process to end (without collecting it, so that `kill` cannot race a reused
    /// pid), then collects it.
    private func wait() {
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR {}
        life.withLock { l in
            guard l.status == nil else { return }
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            l.status = status
        }
    }

    /// The signal that ended it, or nil (exited, or not yet collected).
    var signal: Int32? {
        guard let status = life.withLock({ $0.status }), status & 0x7f != 0, status & 0x7f != 0x7f else { return nil }
        return status & 0x7f
    }

    var terminationDescription: String {
        guard let status = life.withLock({ $0.status }) else { return "still running" }
        if let signal { return "killed by \(Self.name(of: signal))" }
        return "exited with status \((status >> 8) & 0xff)"
    }

    static func name(of signal: Int32) -> String {
        switch signal {
        case SIGSEGV: return "SIGSEGV"
        case SIGBUS: return "SIGBUS"
        case SIGILL: return "SIGILL"
        case SIGFPE: return "SIGFPE"
        case SIGABRT: return "SIGABRT"
        case SIGSYS: return "SIGSYS"
        case SIGXCPU: return "SIGXCPU"
        case SIGKILL: return "SIGKILL"
        case SIGTERM: return "SIGTERM"
        case SIGTRAP: return "SIGTRAP"
        default: return "signal \(signal)"
        }
    }
}
