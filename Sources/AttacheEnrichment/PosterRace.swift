import Attache
import Synchronization

/// A media's work against its cutoff: the work's value, or from the cutoff on the poster a
/// movie's conversion offered, while the conversion goes on. Only movies and sounds ever offer
/// one, yet every media not in the cache waits so: the work runs in a task of its own and the
/// cutoff is an entry of the process's `DeadlineTimer` (checked again every 10 ms after it: the
/// poster may be stored later, still before the deadline), where a task group with a task
/// sleeping until the cutoff cost a task and a kernel timer for each media.
final class PosterRace: Sendable {
    private struct State {
        var continuation: CheckedContinuation<MediaEnricher.Settled, any Error>?
        /// The outcome, when it came before the continuation was there.
        var outcome: Result<MediaEnricher.Settled, any Error>?
        var finished = false
        var check: DeadlineTimer.Entry?
    }

    private let state = Mutex(State())
    private let poster: @Sendable () -> CachedMedia?

    private init(poster: @escaping @Sendable () -> CachedMedia?) {
        self.poster = poster
    }

    static func settle(cutoff: ContinuousClock.Instant, poster: @escaping @Sendable () -> CachedMedia?,
                       _ work: @escaping @Sendable () async throws -> (CachedMedia, CacheEvent)) async throws -> MediaEnricher.Settled {
        let race = PosterRace(poster: poster)
        let task = Task {
            do {
                let (value, event) = try await work()
                race.finish(.success(.value(value, event)))
            } catch {
                race.finish(.failure(error))
            }
        }
        race.check(at: cutoff, cancelling: task)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let outcome = race.state.withLock { s -> Result<MediaEnricher.Settled, any Error>? in
                    if s.outcome == nil { s.continuation = continuation }
                    return s.outcome
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            // The caller's deadline: the work is cancelled, and ends the race with its error.
            task.cancel()
        }
    }

    /// At `instant`, the poster if one is offered (the work, a conversion, is then cancelled
    /// for this payload and goes on as the cache's); else again 10 ms later.
    private func check(at instant: ContinuousClock.Instant, cancelling task: Task<Void, Never>) {
        let entry = DeadlineTimer.shared.schedule(at: instant) { [self] in
            guard !state.withLock({ $0.finished }) else { return }
            if let offered = poster() {
                finish(.success(.poster(offered)))
                task.cancel()
            } else {
                check(at: .now + .milliseconds(10), cancelling: task)
            }
        }
        let late = state.withLock { s -> Bool in
            s.check = entry
            return s.finished
        }
        if late { DeadlineTimer.shared.cancel(entry) }
    }

    /// The first outcome wins; the timer's entry goes.
    private func finish(_ outcome: Result<MediaEnricher.Settled, any Error>) {
        let (continuation, check) = state.withLock { s -> (CheckedContinuation<MediaEnricher.Settled, any Error>?, DeadlineTimer.Entry?) in
            guard !s.finished else { return (nil, nil) }
            s.finished = true
            defer { s.continuation = nil }
            if s.continuation == nil { s.outcome = outcome }
            return (s.continuation, s.check)
        }
        if let check { DeadlineTimer.shared.cancel(check) }
        continuation?.resume(with: outcome)
    }
}
