import AttacheMedia
import AttacheSupport
import Logging
import Metrics
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Where downloaded media is parsed.
public enum Isolation: String, Sendable, CaseIterable {
    /// In sandboxed `attache-decode` helpers (`DecoderPool`).
    case process
    /// On this process's threads (`InProcessDecoder`).
    case inProcess = "in-process"
}

/// Decoding in sandboxed helper processes (`attache-decode`): a fixed set of warm helpers, each driven by a thread of its own, taking jobs in order — light jobs first, and heavy
/// ones (`DecodeJob.isHeavy`: movies, big animations) on all helpers but one, so that a few big
/// files can never take every helper from the photos behind them. A helper that crashes, is killed or
/// overruns a limit costs the job it was on — an `invalid-media` (`decoder-crashed`) or
/// `limits-exceeded` error — and is replaced; every other job carries on. A job whose task is
/// cancelled (the payload's deadline) ends at once: its helper is killed and replaced behind it.
public final class DecoderPool: MediaDecoder, Sendable {
    public struct Configuration: Sendable {
        /// The helper executable (default: `attache-decode` beside this process's executable).
        public var helperPath: String
        /// Helpers, each decoding one job at a time (default: one per core, two at least). Of two
        /// or more, one is always kept from heavy work; a single helper takes whatever comes.
        public var helpers: Int
        /// Address space each helper may map on top of its libraries (RLIMIT_AS), bytes.
        public var addressSpace: Int
        /// CPU seconds one job may use (a soft RLIMIT_CPU: SIGXCPU past it).
        public var jobCPUSeconds: Int
        /// CPU seconds a helper may use in its life (the hard limit); it is replaced past half.
        public var lifetimeCPUSeconds: Int
        /// Jobs a helper takes before it is replaced (what one file did to its heap does not
        /// stay for long).
        public var jobsPerHelper: Int
        /// How long a helper may take to start and sandbox itself.
        public var startTimeout: Duration

        public init(helperPath: String? = nil, helpers: Int? = nil, addressSpace: Int = 1 << 30, jobCPUSeconds: Int = 30,
                    lifetimeCPUSeconds: Int = 600, jobsPerHelper: Int = 1000, startTimeout: Duration = .seconds(10)) {
            self.helperPath = helperPath ?? pathBesideThisExecutable("attache-decode") ?? "attache-decode"
            self.helpers = max(1, helpers ?? max(2, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))))
            self.addressSpace = addressSpace
            self.jobCPUSeconds = jobCPUSeconds
            self.lifetimeCPUSeconds = max(jobCPUSeconds * 2, lifetimeCPUSeconds)
            self.jobsPerHelper = max(1, jobsPerHelper)
            self.startTimeout = startTimeout
        }

        var arguments: [String] {
            ["--address-space", "\(addressSpace)", "--cpu-seconds", "\(lifetimeCPUSeconds)", "--job-cpu-seconds", "\(jobCPUSeconds)"]
        }
    }

    private struct State {
        var stopped = false
        /// Helpers running now, by slot (for `helperPIDs`, and for shutdown).
        var helpers: [Int: HelperProcess] = [:]
        /// Helpers a job has been sent to, not yet answered.
        var busy: Set<pid_t> = []
        var crashes = 0
        var started = 0
    }

    public let configuration: Configuration
    private let logger: Logger
    private let state = Mutex(State())
    /// `attache_decoder_crashes_total`, one series per cause, made at start so that each is
    /// exported at 0 before the first death (a rate over it then needs no `or vector(0)`).
    private let crashCounters: [CrashCause: Counter]
    private let queue: JobQueue

    /// Starts one helper at once — so a helper that cannot run or cannot sandbox itself is an
    /// error here, at start, not a failed attachment later — and the rest in the background.
    public init(configuration: Configuration = Configuration(), logger: Logger = Logger(label: "attache.decoder"),
                metrics: any MetricsFactory = MetricsSystem.factory) throws {
        self.configuration = configuration
        self.logger = logger
        crashCounters = Dictionary(uniqueKeysWithValues: CrashCause.allCases.map { cause in
            (cause, Counter(label: "attache_decoder_crashes_total", dimensions: [("cause", cause.rawValue)], factory: metrics))
        })
        queue = JobQueue(heavyAtOnce: configuration.helpers - 1)
        let first = try HelperProcess(path: configuration.helperPath, arguments: configuration.arguments, within: configuration.startTimeout)
        state.withLock {
            $0.helpers[0] = first
            $0.started = 1
        }
        for slot in 0..<configuration.helpers {
            startDetachedThread(name: "attache-decoder-\(slot)") { [self] in self.serve(slot: slot, helper: slot == 0 ? first : nil) }
        }
    }

    /// Process ids of the helpers running now.
    public var helperPIDs: [pid_t] {
        state.withLock { $0.helpers.values.map(\.pid) }
    }

    /// Process ids of the helpers on a job now.
    var busyPIDs: Set<pid_t> { state.withLock { $0.busy } }

    /// Helpers that died on a job (crashed, or killed by a limit), since the pool started.
    public var crashes: Int { state.withLock { $0.crashes } }

    /// Helpers started, replacements included.
    public var helpersStarted: Int { state.withLock { $0.started } }

    public func decode(_ job: DecodeJob) async throws -> DecodeResult {
        let frame = try await run(DecodeWire.frame(job), heavy: job.isHeavy)
        return try DecodeWire.result(frame)
    }

    /// Sends a frame as a job and returns the answer (test jobs use it directly).
    func run(_ frame: WireFrame, heavy: Bool = false) async throws -> WireFrame {
        let job = Job(frame, heavy: heavy)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                guard job.wait(continuation) else { return }
                // Queued under the state's lock, so that `shutdown` cannot empty the queue between
                // the check and the put.
                let stopped = state.withLock { s in
                    if !s.stopped { queue.put(job) }
                    return s.stopped
                }
                if stopped { job.finish(.failure(IsolationError(.stopped, "the decoder pool is stopped"))) }
            }
        } onCancel: {
            job.cancel()
        }
    }

    /// Stops taking jobs, ends idle helpers, and kills busy ones (their jobs end as cancelled).
    public func shutdown() {
        let helpers = state.withLock { s -> [HelperProcess] in
            guard !s.stopped else { return [] }
            s.stopped = true
            return Array(s.helpers.values)
        }
        queue.removeAll().forEach { $0.finish(.failure(CancellationError())) }
        queue.wake(configuration.helpers)
        helpers.forEach { $0.kill() }
    }

    // MARK: a slot's thread

    private func serve(slot: Int, helper first: HelperProcess?) {
        var helper = first ?? restart(slot: slot)
        while true {
            let taken = queue.take()
            if state.withLock({ $0.stopped }) {
                taken?.finish(.failure(CancellationError()))  // taken just as the pool stopped
                helper?.stop()
                _ = state.withLock { $0.helpers.removeValue(forKey: slot) }
                return
            }
            guard let job = taken else { continue }
            defer { queue.done(job) }
            if let idle = helper, idle.hasExited {
                // Died while idle (killed from outside, say): the job gets a fresh helper instead.
                idle.stop()
                logger.warning("decoder helper died while idle", metadata: [
                    "attache.decoder.pid": "\(idle.pid)", "attache.decoder.end": "\(idle.terminationDescription)",
                ])
                helper = nil
            }
            if helper == nil { helper = start(slot: slot) }
            guard let current = helper else {
                job.finish(.failure(MediaError(.invalidMedia, "no decoder could be started", detail: .decoderUnavailable)))
                continue
            }
            guard job.begin(on: current) else { continue }  // cancelled while queued
            var died = false
            _ = state.withLock { $0.busy.insert(current.pid) }
            defer { _ = state.withLock { $0.busy.remove(current.pid) } }
            do {
                job.finish(.success(try current.exchange(job.frame)))
            } catch {
                died = true
                current.stop()
                job.finish(.failure(job.wasCancelled ? CancellationError() : crashError(current)))
            }
            let spent = current.jobs >= configuration.jobsPerHelper || current.cpuMs > configuration.lifetimeCPUSeconds * 500
            if job.wasCancelled || spent || died {
                // Killed at a deadline (perhaps after its answer was read), worn, or dead: replaced
                // now, so the next job finds a warm helper.
                current.stop()
                helper = restart(slot: slot)
            }
        }
    }

    /// A replacement, tried again (50 ms, doubling to 2 s apart) until one starts or the pool
    /// stops: the pool gets back to its size by itself, not only when the next job comes. Jobs
    /// queued meanwhile go to the other helpers, or wait (within their deadlines).
    private func restart(slot: Int) -> HelperProcess? {
        var pause = Duration.milliseconds(50)
        while !state.withLock({ $0.stopped }) {
            if let helper = start(slot: slot) { return helper }
            usleep(UInt32(pause.milliseconds * 1000))
            pause = min(pause * 2, .seconds(2))
        }
        return nil
    }

    private func start(slot: Int) -> HelperProcess? {
        if state.withLock({ $0.stopped }) { return nil }
        do {
            let helper = try HelperProcess(path: configuration.helperPath, arguments: configuration.arguments,
                                           within: configuration.startTimeout)
            state.withLock {
                $0.helpers[slot] = helper
                $0.started += 1
            }
            return helper
        } catch {
            _ = state.withLock { $0.helpers.removeValue(forKey: slot) }
            logger.error("decoder helper could not be started", metadata: ["attache.error": "\(error)"])
            return nil
        }
    }

    /// Why a helper died on a job: the `cause` of `attache_decoder_crashes_total`.
    enum CrashCause: String, CaseIterable {
        /// A signal of its own making (SIGSEGV, SIGABRT, ...) or of someone else's (SIGKILL).
        case crash
        /// Its job's CPU time ran out (SIGXCPU).
        case cpuLimit = "cpu-limit"
        /// The sandbox killed it for a system call it does not allow (SIGSYS).
        case forbiddenCall = "forbidden-call"
    }

    /// What a helper's death means for the job it was on.
    private func crashError(_ helper: HelperProcess) -> MediaError {
        let signal = helper.signal
        state.withLock { $0.crashes += 1 }
        logger.warning("decoder helper died on a job", metadata: [
            "attache.decoder.pid": "\(helper.pid)", "attache.decoder.end": "\(helper.terminationDescription)",
        ])
        let cause: CrashCause = signal == SIGXCPU ? .cpuLimit : signal == SIGSYS ? .forbiddenCall : .crash
        crashCounters[cause]?.increment()
        switch cause {
        case .cpuLimit:
            return MediaError(.limitsExceeded, "decoding used more than \(configuration.jobCPUSeconds) s of CPU", detail: .decoderCPULimit)
        case .forbiddenCall:
            return MediaError(.invalidMedia, "the decoder made a forbidden system call and was killed (SIGSYS)", detail: .decoderCrashed)
        case .crash:
            return MediaError(.invalidMedia, "the decoder crashed (\(helper.terminationDescription))", detail: .decoderCrashed)
        }
    }
}

/// One job: its frame, and who is waiting for it. Finished exactly once — by its answer, by its
/// helper's death, or by its task's cancellation, whichever comes first.
private final class Job: Sendable {
    enum Phase {
        case new
        case queued(CheckedContinuation<WireFrame, any Error>)
        case running(HelperProcess, CheckedContinuation<WireFrame, any Error>)
        case cancelled
        case finished
    }

    let frame: WireFrame
    /// See `DecodeJob.isHeavy`.
    let heavy: Bool
    private let phase = Mutex<Phase>(.new)
    private let cancelledFlag = Atomic<Bool>(false)

    init(_ frame: WireFrame, heavy: Bool) {
        self.frame = frame
        self.heavy = heavy
    }

    var wasCancelled: Bool { cancelledFlag.load(ordering: .acquiring) }

    /// Parks the caller; false (and resumed at once) when the task was cancelled first.
    func wait(_ continuation: CheckedContinuation<WireFrame, any Error>) -> Bool {
        let parked = phase.withLock { p -> Bool in
            guard case .new = p else { return false }
            p = .queued(continuation)
            return true
        }
        if !parked { continuation.resume(throwing: CancellationError()) }
        return parked
    }

    /// Taken by a helper; false when cancelled while queued.
    func begin(on helper: HelperProcess) -> Bool {
        phase.withLock { p in
            guard case .queued(let c) = p else { return false }
            p = .running(helper, c)
            return true
        }
    }

    func cancel() {
        cancelledFlag.store(true, ordering: .releasing)
        let (continuation, helper) = phase.withLock { p -> (CheckedContinuation<WireFrame, any Error>?, HelperProcess?) in
            switch p {
            case .new: p = .cancelled; return (nil, nil)
            case .queued(let c): p = .cancelled; return (c, nil)
            case .running(let h, let c): p = .cancelled; return (c, h)
            case .cancelled, .finished: return (nil, nil)
            }
        }
        // The answer goes out now; the helper is killed (its thread replaces it).
        helper?.kill()
        continuation?.resume(throwing: CancellationError())
    }

    func finish(_ result: Result<WireFrame, any Error>) {
        let continuation = phase.withLock { p -> CheckedContinuation<WireFrame, any Error>? in
            switch p {
            case .queued(let c), .running(_, let c): p = .finished; return c
            case .new, .cancelled, .finished: return nil
            }
        }
        continuation?.resume(with: result)
    }
}

/// The pool's jobs, in two lines: light jobs are taken first, oldest first; heavy ones, oldest
/// first, only while fewer than `heavyAtOnce` are running. A helper's thread blocks in `take`
/// until it has a job it may run (or is woken by `wake`), and says `done` when the job ends.
// @unchecked: `lines` is read and written under `lock` only.
private final class JobQueue: @unchecked Sendable {
    private struct Lines {
        var light: [Job] = []
        var heavy: [Job] = []
        var heavyRunning = 0
        var wakeUps = 0
    }
    private let heavyAtOnce: Int
    private var lines = Lines()
    private let lock: UnsafeMutablePointer<pthread_mutex_t>
    private let changed: UnsafeMutablePointer<pthread_cond_t>

    init(heavyAtOnce: Int) {
        self.heavyAtOnce = max(1, heavyAtOnce)
        lock = .allocate(capacity: 1)
        changed = .allocate(capacity: 1)
        pthread_mutex_init(lock, nil)
        pthread_cond_init(changed, nil)
    }

    deinit {
        pthread_cond_destroy(changed)
        pthread_mutex_destroy(lock)
        lock.deallocate()
        changed.deallocate()
    }

    private func locked<T>(_ body: (inout Lines) -> T) -> T {
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        return body(&lines)
    }

    func put(_ job: Job) {
        locked { job.heavy ? $0.heavy.append(job) : $0.light.append(job) }
        pthread_cond_broadcast(changed)
    }

    /// The next job this helper may run, waiting for one; nil when woken by `wake`.
    func take() -> Job? {
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        while true {
            if !lines.light.isEmpty { return lines.light.removeFirst() }
            if !lines.heavy.isEmpty && lines.heavyRunning < heavyAtOnce {
                lines.heavyRunning += 1
                return lines.heavy.removeFirst()
            }
            if lines.wakeUps > 0 {
                lines.wakeUps -= 1
                return nil
            }
            pthread_cond_wait(changed, lock)
        }
    }

    /// A job `take` handed out has ended: a heavy one leaves its place to the next.
    func done(_ job: Job) {
        guard job.heavy else { return }
        locked { $0.heavyRunning -= 1 }
        pthread_cond_broadcast(changed)
    }

    /// Wakes `count` waiting threads (each `take` returns nil if nothing it may run is queued).
    func wake(_ count: Int) {
        locked { $0.wakeUps += count }
        pthread_cond_broadcast(changed)
    }

    /// Empties both lines, returning what was in them.
    func removeAll() -> [Job] {
        locked { l in
            defer { l.light = []; l.heavy = [] }
            return l.light + l.heavy
        }
    }
}
