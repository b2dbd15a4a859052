import Attache
import AttachePayload
import Synchronization

/// What one rendered media URL amounts to, ready to attach again: a campaign that sends one image
/// to a million devices fetches and renders it once.
public struct CachedMedia: Sendable {
    /// The entry, with the id and options of the payload that first asked for it.
    public var entry: AttachmentEntry
    public var kind: MediaKind?
    public var format: MediaFormat?
    public var bytes: Int
    /// Found in the store's shared results (another replica, or an earlier process, made it).
    public var fromStore = false

    public init(entry: AttachmentEntry, kind: MediaKind?, format: MediaFormat?, bytes: Int, fromStore: Bool = false) {
        self.entry = entry
        self.kind = kind
        self.format = format
        self.bytes = bytes
        self.fromStore = fromStore
    }
}

/// A size-bounded, TTL-bounded map from a media URL (with its render options) to its result, with
/// single-flight: callers asking for a key that is being computed wait for that computation
/// instead of starting their own. Failures are shared with the waiters but not kept; when the
/// computing caller is cancelled (its payload's deadline passed), the waiters compute afresh.
public final class MediaCache: Sendable {
    public struct Configuration: Sendable {
        public var timeToLive: Duration
        public var maxEntries: Int
        /// Warm-through: the work for a key is the cache's, not its first caller's — when that
        /// caller's deadline passes, the download and render go on (up to this long from their
        /// start) and the result is kept for the next callers, instead of every payload of a
        /// campaign falling back and starting the download again. Nil: off (one-shot commands,
        /// which exit, and batches, which wait anyway).
        public var warmThrough: Duration?
        /// Background works at once; past it, work runs in its caller's time as without warm-through.
        public var maxWarming: Int

        public init(timeToLive: Duration = .seconds(3600), maxEntries: Int = 10_000, warmThrough: Duration? = nil, maxWarming: Int = 16) {
            self.timeToLive = timeToLive
            self.maxEntries = maxEntries
            self.warmThrough = warmThrough
            self.maxWarming = maxWarming
        }
    }

    public struct Statistics: Sendable, Equatable {
        public var hits = 0
        public var misses = 0
        public var shared = 0
        public var entries = 0
        /// Works that went on after every payload asking for them had its answer, and succeeded.
        public var warmed = 0
    }

    private struct Waiter {
        var id: UInt64
        var continuation: CheckedContinuation<CachedMedia, any Error>
    }

    private enum Slot {
        case ready(CachedMedia, expires: ContinuousClock.Instant)
        case pending([Waiter])
    }

    private struct State {
        var slots: [RenderKey: Slot] = [:]
        var order: [RenderKey] = []  // insertion order of ready entries, for eviction
        var statistics = Statistics()
        var nextWaiter: UInt64 = 0
        var warming = 0
        /// What a pending key can give already (a movie's poster while it is converted).
        var provisional: [RenderKey: CachedMedia] = [:]
        /// Pending keys whose work is converting a movie or sound.
        var converting: Set<RenderKey> = []
    }

    /// Thrown to waiters when the caller computing their key was cancelled: they try again.
    private struct ComputationAbandoned: Error {}

    private let state = Mutex(State())
    public let configuration: Configuration

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    public var statistics: Statistics {
        state.withLock { s in
            var stats = s.statistics
            stats.entries = s.order.count
            return stats
        }
    }

    private enum Action {
        case hit(CachedMedia)
        case wait
        case compute
    }

    /// The value for `key`, computed by `compute` when missing. `compute` gets the deadline its
    /// work must keep when it runs as warm-through (nil: its caller's own).
    public func value(
        for key: RenderKey, compute: @escaping @Sendable (_ workDeadline: ContinuousClock.Instant?) async throws -> CachedMedia
    ) async throws -> (CachedMedia, CacheEvent) {
        while true {
            try Task.checkCancellation()
            let now = ContinuousClock.now
            let action = state.withLock { s -> Action in
                switch s.slots[key] {
                case .ready(let value, let expires)? where expires > now:
                    s.statistics.hits += 1
                    return .hit(value)
                case .pending?:
                    return .wait
                default:
                    if case .ready? = s.slots[key] { s.order.removeAll { $0 == key } }
                    s.slots[key] = .pending([])
                    s.statistics.misses += 1
                    return .compute
                }
            }
            switch action {
            case .hit(let value):
                return (value, .hit)
            case .wait:
                do {
                    let value = try await wait(for: key)
                    state.withLock { $0.statistics.shared += 1 }
                    return (value, .shared)
                } catch is ComputationAbandoned {
                    continue
                }
            case .compute:
                if let limit = configuration.warmThrough, reserveWarming() {
                    return (try await computeInBackground(key, until: .now + limit, compute), .miss)
                }
                do {
                    let value = try await compute(nil)
                    finish(key, with: .success(value))
                    return (value, .miss)
                } catch {
                    let cancelled = error is CancellationError || Task.isCancelled
                    finish(key, with: .failure(cancelled ? ComputationAbandoned() : error))
                    throw error
                }
            }
        }
    }

    private func reserveWarming() -> Bool {
        state.withLock { s in
            guard s.warming < configuration.maxWarming else { return false }
            s.warming += 1
            return true
        }
    }

    /// The caller waits like any waiter, registered before the work starts; the work runs in a
    /// task of its own, which the caller's cancellation does not reach.
    private func computeInBackground(
        _ key: RenderKey, until deadline: ContinuousClock.Instant,
        _ compute: @escaping @Sendable (ContinuousClock.Instant?) async throws -> CachedMedia
    ) async throws -> CachedMedia {
        let id = state.withLock { s -> UInt64 in
            s.nextWaiter += 1
            return s.nextWaiter
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                state.withLock { s in
                    if case .pending(var waiters)? = s.slots[key] {
                        waiters.append(Waiter(id: id, continuation: continuation))
                        s.slots[key] = .pending(waiters)
                    }
                }
                Task { [self] in
                    let result: Result<CachedMedia, any Error>
                    do { result = .success(try await compute(deadline)) } catch { result = .failure(error) }
                    let nobodyLeft = state.withLock { s -> Bool in
                        s.warming -= 1
                        if case .pending(let waiters)? = s.slots[key] { return waiters.isEmpty }
                        return false
                    }
                    if nobodyLeft, case .success = result { state.withLock { $0.statistics.warmed += 1 } }
                    finish(key, with: result)
                }
                if Task.isCancelled { cancelWaiter(id, key: key) }
            }
        } onCancel: {
            cancelWaiter(id, key: key)
        }
    }

    private func wait(for key: RenderKey) async throws -> CachedMedia {
        let id = state.withLock { s -> UInt64 in
            s.nextWaiter += 1
            return s.nextWaiter
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let immediate: Result<CachedMedia, any Error>? = state.withLock { s in
                    switch s.slots[key] {
                    case .pending(var waiters)?:
                        waiters.append(Waiter(id: id, continuation: continuation))
                        s.slots[key] = .pending(waiters)
                        return nil
                    case .ready(let value, _)?:
                        return .success(value)
                    case nil:
                        return .failure(ComputationAbandoned())
                    }
                }
                if let immediate { continuation.resume(with: immediate) }
                else if Task.isCancelled { cancelWaiter(id, key: key) }
            }
        } onCancel: {
            cancelWaiter(id, key: key)
        }
    }

    private func cancelWaiter(_ id: UInt64, key: RenderKey) {
        let waiter = state.withLock { s -> Waiter? in
            guard case .pending(var waiters)? = s.slots[key], let i = waiters.firstIndex(where: { $0.id == id }) else { return nil }
            let waiter = waiters.remove(at: i)
            s.slots[key] = .pending(waiters)
            return waiter
        }
        waiter?.continuation.resume(throwing: CancellationError())
    }

    /// The value for `key` when it is cached and fresh (counted as a hit), without waiting or
    /// computing: nil otherwise.
    public func hit(for key: RenderKey) -> CachedMedia? {
        let now = ContinuousClock.now
        return state.withLock { s in
            guard case .ready(let value, let expires)? = s.slots[key], expires > now else { return nil }
            s.statistics.hits += 1
            return value
        }
    }

    /// Offers what a pending key's work has ready before it is done (a movie's poster while the
    /// movie is converted): a payload that cannot wait for the work may attach it. Kept until the
    /// work ends; never cached as the key's value.
    public func offer(_ value: CachedMedia, for key: RenderKey) {
        state.withLock { s in
            if case .pending? = s.slots[key] { s.provisional[key] = value }
        }
    }

    /// What the work for `key` has offered, while it runs.
    public func provisional(for key: RenderKey) -> CachedMedia? {
        state.withLock { $0.provisional[key] }
    }

    /// Notes that the pending work for `key` is converting (until it ends): a payload that gave
    /// up waiting for it can say that its media is still being made.
    public func markConverting(_ key: RenderKey) {
        state.withLock { s in
            if case .pending? = s.slots[key] { s.converting.insert(key) }
        }
    }

    /// Whether the work for `key` is converting now.
    public func isConverting(_ key: RenderKey) -> Bool {
        state.withLock { $0.converting.contains(key) }
    }

    private func finish(_ key: RenderKey, with result: Result<CachedMedia, any Error>) {
        let expires = ContinuousClock.now + configuration.timeToLive
        let waiters = state.withLock { s -> [Waiter] in
            s.provisional[key] = nil
            s.converting.remove(key)
            guard case .pending(let waiters)? = s.slots[key] else { return [] }
            switch result {
            case .success(let value):
                s.slots[key] = .ready(value, expires: expires)
                s.order.append(key)
                while s.order.count > configuration.maxEntries {
                    s.slots[s.order.removeFirst()] = nil
                }
            case .failure:
                s.slots[key] = nil
            }
            return waiters
        }
        for waiter in waiters { waiter.continuation.resume(with: result) }
    }
}
