import Synchronization

/// Runs a callback-shaped `NotificationServiceExtension` under the async runtime. The first
/// content handed to the handler wins; later calls are ignored (as on iOS).
public final class CallbackExtensionAdapter: AsyncNotificationServiceExtension {
    private struct State {
        var delivered: NotificationContent?
        var waiter: CheckedContinuation<NotificationContent?, Never>?
    }

    private let wrapped: any NotificationServiceExtension
    private let state = Mutex(State())
    private let original = Mutex<NotificationContent?>(nil)

    public init(_ wrapped: any NotificationServiceExtension) {
        self.wrapped = wrapped
    }

    private func deliver(_ content: NotificationContent) {
        let waiter = state.withLock { s -> CheckedContinuation<NotificationContent?, Never>? in
            guard s.delivered == nil else { return nil }
            s.delivered = content
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume(returning: content)
    }

    public func didReceive(_ request: NotificationRequest) async -> ExtensionResult {
        original.withLock { $0 = request.content }
        let content = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<NotificationContent?, Never>) in
                let early = state.withLock { s -> NotificationContent?? in
                    if let delivered = s.delivered { return .some(delivered) }
                    s.waiter = continuation
                    return .none
                }
                if let early {
                    continuation.resume(returning: early)
                    return
                }
                wrapped.didReceive(request) { [weak self] content in self?.deliver(content) }
                if Task.isCancelled { self.resumeWaiter() }
            }
        } onCancel: {
            resumeWaiter()
        }
        return result(content ?? request.content, original: request.content)
    }

    private func resumeWaiter() {
        state.withLock { s -> CheckedContinuation<NotificationContent?, Never>? in
            defer { s.waiter = nil }
            return s.waiter
        }?.resume(returning: nil)
    }

    public func serviceExtensionTimeWillExpire() -> ExtensionResult? {
        wrapped.serviceExtensionTimeWillExpire()
        guard let content = state.withLock({ $0.delivered }), let original = original.withLock({ $0 }) else { return nil }
        return result(content, original: original)
    }

    private func result(_ content: NotificationContent, original: NotificationContent) -> ExtensionResult {
        content == original
            ? ExtensionResult(content: content, outcome: .passthrough, reason: .noMedia)
            : ExtensionResult(content: content, outcome: .enriched)
    }
}
