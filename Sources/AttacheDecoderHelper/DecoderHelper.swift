// What a sandboxed decoder helper process does, from its first instruction to its exit: started
// by Attache's decoder pool (never by hand) with a socket on descriptor 0, it loads its libraries,
// enters its sandbox (rlimits, no new privileges, a seccomp filter: see CSandbox), says it is
// ready, then answers jobs one at a time until the socket closes. It opens no file and no socket:
// the media comes in over the socket and the renditions go back the same way.
//
// `attache-decode` runs it with the decoders alone; the tests' probe helper runs the same process
// with a job of its own in front (a forbidden call made inside the sandbox), so what the tests
// show of the sandbox is what the shipped helper has, and the shipped one has no such job.
import AttacheMedia
import AttachePayload
import AttacheSupport
internal import CMalloc
internal import CSandbox
#if canImport(Glibc)
import Glibc
#endif

package enum DecoderHelper {
    /// Runs the helper: `special` sees each job first and answers it when it is one of its own
    /// (the tests' probe), nil leaves it to the decoders. Never returns.
    package static func run(special: (WireFrame) -> WireFrame? = { _ in nil }) -> Never {
        let arguments = Arguments(Array(CommandLine.arguments.dropFirst()))
        let channel = FrameChannel(fd: 0, useSend: false, maxBytes: 1 << 30)
        func answer(_ frame: WireFrame) {
            // The pool is gone (or killed us mid-write): nothing left to do.
            do { try channel.write(frame) } catch { exit(0) }
        }
        if let failure = prepare(arguments) {
            answer(WireFrame(JSONObject(["ready": .bool(false), "message": .string(failure)])))
            exit(70)
        }
        answer(WireFrame(JSONObject(["ready": .bool(true)])))
        while true {
            let frame: WireFrame
            do {
                guard let next = try channel.read() else { exit(0) }
                frame = next
            } catch {
                exit(65)  // not a frame: the pool is not what started us
            }
            if arguments.jobCPUSeconds > 0 { attache_sandbox_allow_cpu(arguments.jobCPUSeconds) }
            answer(special(frame) ?? decode(frame))
        }
    }

    /// The CPU time the helper has used, for an answer's `cpu_ms`.
    package static var cpuMilliseconds: Int { Int(attache_sandbox_cpu_ms()) }

    private static func decode(_ frame: WireFrame) -> WireFrame {
        let result: Result<DecodeResult, MediaError>
        do {
            let job = try DecodeWire.job(frame)
            result = .success(try job.perform())
        } catch let error as MediaError {
            result = .failure(error)
        } catch {
            result = .failure(MediaError(.invalidMedia, "\(error)"))
        }
        return DecodeWire.frame(result, cpuMs: cpuMilliseconds)
    }

    /// Tunes the heap, loads the libraries and enters the sandbox; the reason it could not, or nil.
    private static func prepare(_ arguments: Arguments) -> String? {
        // A helper decodes file after file of similar sizes: its heap is kept between jobs instead
        // of being returned to the kernel and faulted back in (glibc would mmap each large buffer
        // afresh and trim the heap after each job: a 1080x720 JPEG took 6.5 ms here against
        // 3.5 ms in a long-running process). Buffers up to 32 MB (glibc's most) come from the
        // heap, and up to 128 MB of it is kept free: measured when a progressive 9 MP JPEG's 55 MB
        // of coefficients and its rows came from it (with 64 MB the heap was trimmed after each
        // and the next one spent a fifth of its time faulting pages back in); a scaled decode
        // keeps 4-11 MB of them (coefficients.c), an unscaled one all. The address-space limit
        // still holds.
        _ = mallopt(M_MMAP_THRESHOLD, 32 << 20)
        _ = mallopt(M_TRIM_THRESHOLD, 128 << 20)

        // Everything that opens files happens before the filter: FFmpeg's libraries, libheif,
        // libavif and libjxl (dlopen).
        do {
            try VideoPipeline.loadLibraries()
            try ImagePipeline.loadLibraries()
        } catch {
            return "\(error)"
        }
        var limits = attache_sandbox_limits()
        if arguments.addressSpace > 0 {
            // The budget comes on top of what the process has mapped already (runtime, libraries).
            limits.address_space = attache_sandbox_address_space_used() + arguments.addressSpace
        }
        limits.cpu_seconds = arguments.cpuSeconds
        var message = [CChar](repeating: 0, count: 256)
        if attache_sandbox_enter(&limits, &message, message.count) != 0 {
            return String(cBuffer: message)
        }
        return nil
    }

    /// The flags the pool starts a helper with (DecoderPool.Configuration.arguments).
    struct Arguments {
        var addressSpace: UInt64 = 0
        var cpuSeconds: UInt64 = 0
        var jobCPUSeconds: UInt64 = 0

        init(_ arguments: [String]) {
            var rest = arguments[...]
            while let flag = rest.popFirst() {
                switch flag {
                case "--address-space": addressSpace = UInt64(rest.popFirst() ?? "") ?? 0
                case "--cpu-seconds": cpuSeconds = UInt64(rest.popFirst() ?? "") ?? 0
                case "--job-cpu-seconds": jobCPUSeconds = UInt64(rest.popFirst() ?? "") ?? 0
                default:
                    let text = "\(CommandLine.arguments[0]): unknown argument \(flag); this helper is started by Attache's decoder pool\n"
                    _ = text.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
                    exit(64)
                }
            }
        }
    }
}
