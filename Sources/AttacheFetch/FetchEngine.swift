import AttacheSupport
#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Logging
import Synchronization

/// The transport all of Attache uses: one libcurl multi handle, driven by one dedicated thread,
/// running many transfers at once over reused connections, each bounded by its payload's deadline
/// and by the address policy.
public final class FetchEngine: Sendable {
    public struct Configuration: Sendable {
        public var policy: AddressPolicy
        public var connectTimeout: Duration
        /// Abort when slower than `lowSpeedLimit` bytes/s for `lowSpeedTime` seconds, or for two
        /// thirds of the transfer's time when that is longer (code `tooSlow`); 0 seconds: never.
        public var lowSpeedLimit: Int
        public var lowSpeedTime: Int
        /// Used only when set; proxy environment variables are otherwise ignored.
        public var proxy: String?
        public var userAgent: String
        /// Bodies up to this size stay in memory; larger ones go to a temp file.
        public var memoryThreshold: Int
        /// Where temp files go (the media directory, so a rename into the store is cheap).
        public var tempDirectory: String
        public var maxRedirects: Int
        public var maxConnectionsPerHost: Int
        public var maxConnections: Int
        /// Transfers per origin handed to libcurl at once; later ones wait in the engine, in
        /// order. Above `maxConnectionsPerHost` so HTTP/2 can multiplex and a freed connection
        /// finds its next transfer ready.
        public var maxTransfersPerOrigin: Int
        /// Certificate authorities (a PEM file) trusted instead of the system's: a private upstream's.
        public var caFile: String?

        public init(
            policy: AddressPolicy = AddressPolicy(),
            connectTimeout: Duration = .seconds(3),
            lowSpeedLimit: Int = 1024,
            lowSpeedTime: Int = 3,
            proxy: String? = nil,
            userAgent: String = "Attache/\(AttacheVersion.string)",
            memoryThreshold: Int = 8 << 20,
            tempDirectory: String = "/tmp",
            maxRedirects: Int = 5,
            maxConnectionsPerHost: Int = 16,
            maxConnections: Int = 256,
            maxTransfersPerOrigin: Int = 64,
            caFile: String? = nil
        ) {
            self.policy = policy
            self.connectTimeout = connectTimeout
            self.lowSpeedLimit = lowSpeedLimit
            self.lowSpeedTime = lowSpeedTime
            self.proxy = proxy
            self.userAgent = userAgent
            self.memoryThreshold = memoryThreshold
            self.tempDirectory = tempDirectory
            self.maxRedirects = maxRedirects
            self.maxConnectionsPerHost = maxConnectionsPerHost
            self.maxConnections = maxConnections
            self.maxTransfersPerOrigin = maxTransfersPerOrigin
            self.caFile = caFile
        }
    }

    private struct Commands {
        var adds: [CurlTransfer] = []
        var cancels: [UInt64] = []
        var nextID: UInt64 = 1
        var stopping = false
        var stopped = false
        var connectionsOpened = 0
        var bytesReceived = 0
        var inFlight = 0
    }

    private let commands = Mutex(Commands())
    private let exited = Latch()

    /// Opened once by the engine thread as its very last act; waited on by blocking (the CLI's
    /// exit path) or by suspending (the service's shutdown), never by polling.
    private final class Latch: Sendable {
        private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))
        private let semaphore = DispatchSemaphore(value: 0)

        func open() {
            let waiters = state.withLock { s in
                s.open = true
                defer { s.waiters = [] }
                return s.waiters
            }
            semaphore.signal()
            for waiter in waiters { waiter.resume() }
        }

        /// Blocks the calling thread until open, or `timeout` has passed.
        func wait(timeout: Duration) {
            guard !state.withLock({ $0.open }) else { return }
            _ = semaphore.wait(timeout: .now() + .milliseconds(Int(timeout.milliseconds)))
        }

        func wait() async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let open = state.withLock { s -> Bool in
                    if !s.open { s.waiters.append(continuation) }
                    return s.open
                }
                if open { continuation.resume() }
            }
        }
    }
    private let multi: UncheckedMulti
    public let configuration: Configuration

    /// Only the engine thread calls into the multi handle, except `wakeup`, which curl allows
    /// from any thread; the handle is freed only after the thread has stopped.
    private final class UncheckedMulti: @unchecked Sendable {
        let multi: CurlMulti
        init(_ multi: CurlMulti) { self.multi = multi }
    }

    public init(configuration: Configuration = Configuration(), logger: Logger = Logger(label: "attache.fetch")) throws {
        self.configuration = configuration
        multi = UncheckedMulti(try CurlMulti(
            maxConnectionsPerHost: configuration.maxConnectionsPerHost,
            maxConnections: configuration.maxConnections,
            perOriginWindow: configuration.maxTransfersPerOrigin
        ))
        for cidr in configuration.policy.allowed {
            logger.notice("address allowance in force", metadata: ["attache.fetch.allowed": "\(cidr)"])
        }
        for endpoint in configuration.policy.allowedEndpoints {
            logger.debug("socket allowance in force", metadata: ["attache.fetch.allowed": "\(endpoint.address) port \(endpoint.port)"])
        }
        // The thread holds the engine only while it loops, and says so when it has let go: a
        // process may then exit without libcurl or the engine being freed under its feet.
        startDetachedThread(name: "attache-fetch") { [weak self, exited] in
            if let self { self.loop() }
            exited.open()
        }
    }

    deinit {
        requestStop()
    }

    /// Fetches one URL, finishing by `deadline` at the latest. Cancelling the calling task removes
    /// the transfer at once, frees its handle and deletes its temp file. `logger` is the caller's
    /// (with its request's metadata), as async-http-client takes one per request: each transfer's
    /// end is logged there at debug level.
    public func fetch(_ request: FetchRequest, deadline: ContinuousClock.Instant, logger: Logger = FetchEngine.silent) async throws -> FetchResult {
        let id = commands.withLock { c -> UInt64 in
            defer { c.nextID += 1 }
            return c.nextID
        }
        var logger = logger
        logger[metadataKey: "attache.fetch.id"] = "\(id)"
        do {
            let result = try await transfer(id: id, request, deadline: deadline)
            logger.debug("fetched", metadata: [
                "attache.fetch.status": "\(result.status)", "attache.fetch.bytes": "\(result.bytes)",
                "attache.fetch.ms": "\(Int(result.timings.total))",
            ])
            return result
        } catch {
            logger.debug("fetch failed", metadata: ["attache.fetch.error": "\(error)"])
            throw error
        }
    }

    /// A logger that drops everything: the default for callers that pass none.
    public static let silent = Logger(label: "attache.fetch", factory: { _ in SwiftLogNoOpLogHandler() })

    private func transfer(id: UInt64, _ request: FetchRequest, deadline: ContinuousClock.Instant) async throws -> FetchResult {
        let transfer = try CurlTransfer(id: id, request: request, deadline: deadline, settings: configuration)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                transfer.attach(continuation)
                let accepted = commands.withLock { c -> Bool in
                    guard !c.stopping else { return false }
                    c.adds.append(transfer)
                    c.inFlight += 1
                    // One wake per batch: the engine takes every queued add when it wakes, so
                    // only the first add after it emptied the queue needs to write to its pipe.
                    if c.adds.count == 1 && !c.stopped { multi.multi.wakeup() }
                    return true
                }
                if !accepted {
                    transfer.complete(.failure(FetchError(.fetchFailed, "fetch engine is shut down")))
                }
            }
        } onCancel: {
            commands.withLock { $0.cancels.append(id) }
            wakeEngine()
        }
    }

    /// New connections opened by the engine so far (the rest of the transfers reused one).
    public var connectionsOpened: Int { commands.withLock { $0.connectionsOpened } }

    /// Body bytes of the transfers that succeeded so far.
    public var bytesReceived: Int { commands.withLock { $0.bytesReceived } }

    /// True until `shutdown` (or a failure) stops the engine's thread.
    public var isRunning: Bool { commands.withLock { !$0.stopping && !$0.stopped } }

    /// Transfers added and not yet finished.
    public var inFlight: Int { commands.withLock { $0.inFlight } }

    /// Wakes the engine thread; under the lock, so it can never touch a closed multi handle.
    private func wakeEngine() {
        commands.withLock { c in
            if !c.stopped { multi.multi.wakeup() }
        }
    }

    /// Stops the engine and blocks (up to a second) until its thread has let go of libcurl and of
    /// the engine, so a process can exit right after. Transfers in flight end with `CancellationError`.
    public func shutdown() {
        requestStop()
        exited.wait(timeout: .seconds(1))
    }

    /// The same, suspending instead of blocking a thread (a service's shutdown).
    public func shutdownGracefully() async {
        requestStop()
        await exited.wait()
    }

    private func requestStop() {
        commands.withLock { c in
            c.stopping = true
            if !c.stopped { multi.multi.wakeup() }
        }
    }

    private func loop() {
        let multi = self.multi.multi
        var cancelledEarly = Set<UInt64>()
        while true {
            let (adds, cancels, stopping) = commands.withLock { c in
                defer { c.adds = []; c.cancels = [] }
                return (c.adds, c.cancels, c.stopping)
            }
            cancelledEarly.formUnion(cancels)
            for transfer in adds {
                if cancelledEarly.remove(transfer.id) != nil {
                    transfer.complete(.failure(CancellationError()))
                } else {
                    multi.add(transfer)
                }
            }
            for id in cancels {
                multi.remove(id: id, with: CancellationError())
            }
            if stopping {
                break
            }
            multi.perform()
            let opened = multi.connectionsOpened, received = multi.bytesReceived
            let active = multi.activeCount
            commands.withLock { c in
                c.connectionsOpened = opened
                c.bytesReceived = received
                c.inFlight = active + c.adds.count
            }
            multi.wait(maxWaitMs: multi.nextDeadlineWait(cap: 250))
        }
        multi.cancelAll()
        commands.withLock { c in
            multi.close()
            c.stopped = true
            c.inFlight = 0
        }
    }
}
