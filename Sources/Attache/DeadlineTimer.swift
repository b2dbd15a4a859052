import Synchronization

/// The one timer behind every payload's deadline in a process. A task sleeping until each
/// payload's deadline costs a kernel timer per payload (dispatch programs one for every sleep and
/// every cancelled sleep), although almost every payload is answered long before its deadline:
/// profiles of cached enrichment put about a tenth of the process's CPU there. Here a payload's
/// deadline is an entry in a heap under a lock, taken off when it is answered; one sleeping task
/// waits for the earliest deadline still pending, and is replaced only when a payload comes with
/// an earlier one than it waits for (a shorter `Attache-Deadline-Ms`). The enrichment's cutoffs
/// (a movie's poster taken in place of its conversion) are entries here too.
public final class DeadlineTimer: Sendable {
    public static let shared = DeadlineTimer()

    /// A scheduled action, to cancel it with.
    public struct Entry: Sendable {
        fileprivate let id: UInt64
    }

    fileprivate struct Pending {
        let at: ContinuousClock.Instant
        let id: UInt64
    }

    fileprivate struct State {
        /// A min-heap by instant. An entry whose action is gone from `actions` was cancelled: it
        /// is dropped when it reaches the top, so cancelling costs no search.
        var heap: [Pending] = []
        var actions: [UInt64: @Sendable () -> Void] = [:]
        var nextID: UInt64 = 0
        /// The task sleeping until an instant, none when nothing is pending; its generation tells
        /// a replaced sleeper that woke anyway not to start another.
        var sleeper: (until: ContinuousClock.Instant, task: Task<Void, Never>)?
        var generation: UInt64 = 0
    }

    private let state = Mutex(State())

    /// Runs `action` at `instant`, unless cancelled first. Actions due together run one after
    /// another on the timer's task: each must be short (the runtime's takes a best attempt and
    /// cancels a task).
    public func schedule(at instant: ContinuousClock.Instant, _ action: @escaping @Sendable () -> Void) -> Entry {
        let (entry, replaced) = state.withLock { s -> (Entry, Task<Void, Never>?) in
            let id = s.nextID
            s.nextID &+= 1
            s.actions[id] = action
            s.push(Pending(at: instant, id: id))
            guard s.sleeper.map({ instant < $0.until }) ?? true else { return (Entry(id: id), nil) }
            return (Entry(id: id), s.sleep(until: instant, timer: self))
        }
        replaced?.cancel()
        return entry
    }

    /// The action will not run (unless it is running already).
    public func cancel(_ entry: Entry) {
        state.withLock { s in
            s.actions[entry.id] = nil
            // Cancelled entries wait in the heap until they reach its top, up to a deadline's
            // length. When they are over half of it, the heap is rebuilt from the live ones: a
            // linear pass, paid for by the half a heap of cancellations since the last one.
            if s.heap.count > 1024, s.actions.count < s.heap.count / 2 {
                let live = s.heap.filter { s.actions[$0.id] != nil }
                s.heap.removeAll(keepingCapacity: true)
                for pending in live { s.push(pending) }
            }
        }
    }

    /// What a sleeper does when it wakes: the actions due run, and the next sleeper waits for the
    /// earliest entry still pending.
    fileprivate func wake(generation: UInt64) {
        let (due, replaced) = state.withLock { s -> ([@Sendable () -> Void], Task<Void, Never>?) in
            let now = ContinuousClock.now
            var due: [@Sendable () -> Void] = []
            while let top = s.heap.first {
                guard let action = s.actions[top.id] else { s.pop(); continue }
                guard top.at <= now else { break }
                s.pop()
                s.actions[top.id] = nil
                due.append(action)
            }
            guard s.generation == generation else { return (due, nil) }
            s.sleeper = nil
            guard let next = s.heap.first else { return (due, nil) }
            return (due, s.sleep(until: next.at, timer: self))
        }
        replaced?.cancel()
        for action in due { action() }
    }
}

extension DeadlineTimer.State {
    /// A new sleeper for `instant`, in place of the one there was (returned, to be cancelled
    /// outside the lock).
    fileprivate mutating func sleep(until instant: ContinuousClock.Instant, timer: DeadlineTimer) -> Task<Void, Never>? {
        generation &+= 1
        let generation = generation
        let replaced = sleeper?.task
        sleeper = (instant, Task {
            // Cancelled: replaced by a sleeper for an earlier instant.
            guard (try? await Task.sleep(until: instant, clock: .continuous)) != nil else { return }
            timer.wake(generation: generation)
        })
        return replaced
    }

    fileprivate mutating func push(_ entry: DeadlineTimer.Pending) {
        heap.append(entry)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].at < heap[parent].at else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    fileprivate mutating func pop() {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var least = parent
            if left < heap.count, heap[left].at < heap[least].at { least = left }
            if right < heap.count, heap[right].at < heap[least].at { least = right }
            guard least != parent else { return }
            heap.swapAt(parent, least)
            parent = least
        }
    }
}
