import AttachePayload
import Synchronization

/// What one rendered media URL amounts to, ready to attach again: a campaign that sends one image
/// to a million devices fetches and renders it once.
public struct CachedMedia: Sendable {
    /// The entry, with the id and options of the payload that first asked for it.
    public var entry: AttachmentEntry
    public var kind: String
    public var format: String
    public var bytes: Int
    /// Found in the store's shared results (another replica, or an earlier process, made it).
    public var fromStore = false

    public init(entry: AttachmentEntry, kind: String, format: String, bytes: Int, fromStore: Bool = false) {
        self.entry = entry
        self.kind = kind
        self.format = format
        self.bytes = bytes
        self.fromStore = fromStore
    }
}

/// How a value came out of the cache.
public enum CacheEvent: String, Sendable {
    /// Already there.
    case hit
    /// Computed by this caller.
    case miss
    /// Computed by another caller at the same time, and waited for (single-flight).
    case shared
}

/// A size-bounded, TTL-bounded map from a media URL (with its render options) to its result, with
/// single-flight: callers asking for a key that is being computed wait for that computation
/// instead of starting their own. Failures are shared with the waiters but not kept; when the
/// computing caller is cancelled (its payload's deadline passed), the waiters compute afresh.
public final class MediaCache: Sendable {
    public struct Configuration: Sendable {
        public var timeToLive: Duration
        public var maxEntries: Int
        public init(timeToLive: Duration = .seconds(3600), maxEntries: Int = 10_000) {
            self.timeToLive = timeToLive
            self.maxEntries = maxEntries
        }
    }

    public struct Statistics: Sendable, Equatable {
        public var hits = 0
        public var misses = 0
        public var shared = 0
        public var entries = 0
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
        var slots: [String: Slot] = [:]
        var order: [String] = []  // insertion order of ready entries, for eviction
        var statistics = Statistics()
        var nextWaiter: UInt64 = 0
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

    public func value(
        for key: String, compute: @Sendable () async throws -> CachedMedia
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
                do {
                    let value = try await compute()
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

    private func wait(for key: String) async throws -> CachedMedia {
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

    private func cancelWaiter(_ id: UInt64, key: String) {
        let waiter = state.withLock { s -> Waiter? in
            guard case .pending(var waiters)? = s.slots[key], let i = waiters.firstIndex(where: { $0.id == id }) else { return nil }
            let waiter = waiters.remove(at: i)
            s.slots[key] = .pending(waiters)
            return waiter
        }
        waiter?.continuation.resume(throwing: CancellationError())
    }

    private func finish(_ key: String, with result: Result<CachedMedia, any Error>) {
        let expires = ContinuousClock.now + configuration.timeToLive
        let waiters = state.withLock { s -> [Waiter] in
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
