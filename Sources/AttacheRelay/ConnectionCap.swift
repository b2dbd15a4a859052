import AttacheOperations
import NIOCore
import Synchronization

/// The relay's client connections: how many are open, overall and from each address, and how
/// many have closed (what tells the process to give freed memory back).
public final class RelayConnections: Sendable {
    private struct Counts {
        var total = 0
        var byAddress: [String: Int] = [:]
    }
    private let counts = Mutex(Counts())
    private let closed = Atomic<Int>(0)
    let maximum: Int
    let maximumPerAddress: Int

    public init(maximum: Int, maximumPerAddress: Int) {
        self.maximum = maximum
        self.maximumPerAddress = maximumPerAddress
    }

    /// Takes a place for a connection from `address`; false when it is over either cap.
    func enter(_ address: String) -> Bool {
        counts.withLock { counts in
            guard counts.total < maximum, counts.byAddress[address, default: 0] < maximumPerAddress else { return false }
            counts.total += 1
            counts.byAddress[address, default: 0] += 1
            return true
        }
    }

    func leave(_ address: String) {
        counts.withLock { counts in
            counts.total -= 1
            let left = counts.byAddress[address, default: 1] - 1
            counts.byAddress[address] = left > 0 ? left : nil
        }
        closed.wrappingAdd(1, ordering: .relaxed)
    }

    /// Connections closed since the last call.
    public func takeClosed() -> Int { closed.exchange(0, ordering: .relaxed) }
}

/// The first handler of every client connection: a connection past the caps is closed before a
/// byte of it is read (a client that opens connections without end, or one address that takes
/// them all, cannot use up the process's file descriptors or memory).
final class ConnectionCap: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    private let connections: RelayConnections
    private let metrics: EnrichmentMetrics
    private var address: String?

    init(connections: RelayConnections, metrics: EnrichmentMetrics) {
        self.connections = connections
        self.metrics = metrics
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { entered(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        entered(context)
        context.fireChannelActive()
    }

    private func entered(_ context: ChannelHandlerContext) {
        guard address == nil else { return }
        let from = context.channel.remoteAddress?.ipAddress ?? "unknown"
        guard connections.enter(from) else {
            metrics.connectionRefused()
            context.close(promise: nil)
            return
        }
        address = from
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let address {
            self.address = nil
            connections.leave(address)
        }
        context.fireChannelInactive()
    }
}
