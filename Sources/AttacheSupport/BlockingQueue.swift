import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A first-in, first-out queue that plain threads block on: what `BlockingPool` and the decoder
/// pool hand their work out through. An element's slot is emptied when it is taken, so a finished
/// job's captures (a fetched body, its temp file) do not outlive it until the queue is compacted.
// @unchecked: `state` is behind its Mutex; the semaphore is a POSIX semaphore, safe from any thread.
public final class BlockingQueue<Element: Sendable>: @unchecked Sendable {
    private struct State {
        var items: [Element?] = []
        var head = 0
    }
    private let state = Mutex(State())
    private let semaphore: UnsafeMutablePointer<sem_t>  // counts queued elements, plus wake-ups

    public init() {
        semaphore = .allocate(capacity: 1)
        sem_init(semaphore, 0, 0)
    }

    deinit {
        sem_destroy(semaphore)
        semaphore.deallocate()
    }

    public func put(_ element: Element) {
        state.withLock { $0.items.append(element) }
        sem_post(semaphore)
    }

    /// The oldest element, waiting until there is one; nil when woken by `wake` with nothing queued.
    public func take() -> Element? {
        while sem_wait(semaphore) != 0 {}
        return state.withLock { s in
            guard s.head < s.items.count else { return nil }
            let element = s.items[s.head].take()
            s.head += 1
            if s.head > 64 && s.head * 2 > s.items.count {
                s.items.removeFirst(s.head)
                s.head = 0
            }
            return element
        }
    }

    /// Wakes `count` waiting threads (each `take` returns nil if nothing is queued).
    public func wake(_ count: Int) {
        for _ in 0..<count { sem_post(semaphore) }
    }

    /// Empties the queue, returning what was in it, oldest first.
    public func removeAll() -> [Element] {
        state.withLock { s in
            let rest = s.items[s.head...].compactMap { $0 }
            s.items.removeAll()
            s.head = 0
            return rest
        }
    }
}
