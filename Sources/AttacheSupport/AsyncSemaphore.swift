import Synchronization

/// Limits how many tasks do something at once; waiting is cancellable (a waiter whose deadline
/// passes leaves the queue at once).
public final class AsyncSemaphore: Sendable {
    private struct Waiter {
        var id: UInt64
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var available: Int
        var waiters: [Waiter] = []
        var nextID: UInt64 = 0
    }

    private let state: Mutex<State>

    public init(_ permits: Int) {
        state = Mutex(State(available: max(1, permits)))
    }

    /// Runs `body` holding one permit.
    public func withPermit<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await acquire()
        defer { release() }
        return try await body()
    }

    private func acquire() async throws {
        let id = state.withLock { s -> UInt64? in
            if s.available > 0 {
                s.available -= 1
                return nil
            }
            s.nextID += 1
            return s.nextID
        }
        guard let id else { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let granted = state.withLock { s -> Bool in
                    if s.available > 0 {  // released between the two locks
                        s.available -= 1
                        return true
                    }
                    s.waiters.append(Waiter(id: id, continuation: continuation))
                    return false
                }
                if granted { continuation.resume() }
                else if Task.isCancelled { cancel(id) }
            }
        } onCancel: {
            cancel(id)
        }
    }

    private func cancel(_ id: UInt64) {
        let waiter = state.withLock { s -> Waiter? in
            guard let i = s.waiters.firstIndex(where: { $0.id == id }) else { return nil }
            return s.waiters.remove(at: i)
        }
        waiter?.continuation.resume(throwing: CancellationError())
    }

    private func release() {
        let next = state.withLock { s -> Waiter? in
            if s.waiters.isEmpty {
                s.available += 1
                return nil
            }
            return s.waiters.removeFirst()  // the permit passes straight to the next waiter
        }
        next?.continuation.resume()
    }
}
