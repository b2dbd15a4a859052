import Synchronization

/// Hands values from one thread to another, at most `capacity` ahead: the producer blocks while
/// that many wait to be taken. Either side may `close` it (the consumer on an error of its own),
/// which wakes the other: `put` then refuses, and `take` gives what is left, then nil.
public final class Handoff<Element>: Sendable {
    private let items = BlockingQueue<Box>()
    private let room = BlockingQueue<Bool>()
    private let closed = Atomic<Bool>(false)

    /// An element crosses threads once, owned by one side at a time.
    private struct Box: @unchecked Sendable {
        let element: Element?
    }

    public init(capacity: Int) {
        for _ in 0..<max(1, capacity) { room.put(true) }
    }

    /// Waits for room; false when the handoff was closed (the element is not handed over).
    public func put(_ element: Element) -> Bool {
        guard !closed.load(ordering: .acquiring), room.take() != nil, !closed.load(ordering: .acquiring) else { return false }
        items.put(Box(element: element))
        return true
    }

    /// The next element, waiting for it; nil once closed and empty.
    public func take() -> Element? {
        guard let box = items.take(), let element = box.element else { return nil }
        room.put(true)
        return element
    }

    /// No more elements: wakes a `take` and a `put` that wait.
    public func close() {
        closed.store(true, ordering: .releasing)
        items.put(Box(element: nil))
        room.put(true)
    }
}
