import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Why a tenant's request is not taken now, and when to try again: answered 429 with
/// `Retry-After` (the service, the relay), or left for redelivery (the worker).
public struct TenantRefusal: Error, Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        case rate = "rate-limited", concurrency = "concurrency-limited", quota = "quota-exhausted"
    }
    public let kind: Kind
    /// Whole seconds, at least 1.
    public let retryAfter: Int
    public let message: String
    public var description: String { message }
}

/// One tenant's running counts: a token bucket for its rate, its payloads in flight, and the bytes
/// it downloaded today (UTC). Kept across reloads of the tenants file (by name), so an edit does
/// not hand a tenant a fresh burst or a fresh quota.
final class TenantCounters: Sendable {
    private struct State {
        var tokens: Double
        var refilled: ContinuousClock.Instant
        var inFlight = 0
        var day = 0
        var downloaded = 0
    }
    private let state: Mutex<State>

    init(burst: Int) {
        state = Mutex(State(tokens: Double(burst), refilled: .now))
    }

    /// Takes a token and a concurrency slot, or says why not. Refused requests take nothing.
    func enter(_ tenant: Tenant, now: ContinuousClock.Instant = .now, wallSeconds: Int = Int(time(nil))) -> TenantRefusal? {
        state.withLock { s in
            let today = wallSeconds / 86_400
            if s.day != today {
                s.day = today
                s.downloaded = 0
            }
            if let quota = tenant.dailyDownloadBytes, s.downloaded >= quota {
                let untilMidnight = (today + 1) * 86_400 - wallSeconds
                return TenantRefusal(kind: .quota, retryAfter: max(1, untilMidnight),
                                     message: "tenant \(tenant.name) downloaded its \(quota) bytes for today (UTC)")
            }
            if let rate = tenant.rate {
                let elapsed = s.refilled.duration(to: now)
                let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
                s.tokens = min(Double(rate.burst), s.tokens + seconds * rate.perSecond)
                s.refilled = now
                guard s.tokens >= 1 else {
                    let wait = (1 - s.tokens) / rate.perSecond
                    return TenantRefusal(kind: .rate, retryAfter: max(1, Int(wait.rounded(.up))),
                                         message: "tenant \(tenant.name) is over its rate of \(rate.perSecond) requests a second")
                }
            }
            if let limit = tenant.concurrency, s.inFlight >= limit {
                return TenantRefusal(kind: .concurrency, retryAfter: 1,
                                     message: "tenant \(tenant.name) has \(limit) payloads in flight, its most")
            }
            if tenant.rate != nil { s.tokens -= 1 }
            s.inFlight += 1
            return nil
        }
    }

    /// Gives the slot back.
    func leave() {
        state.withLock { $0.inFlight -= 1 }
    }

    /// Takes `bytes` from today's (UTC) quota, or refuses when they do not fit in what is left:
    /// every transfer of the tenant claims each chunk before keeping it, so payloads in flight
    /// together never download more than the quota between them.
    func claim(_ bytes: Int, quota: Int, wallSeconds: Int = Int(time(nil))) -> Bool {
        state.withLock { s in
            let today = wallSeconds / 86_400
            if s.day != today {
                s.day = today
                s.downloaded = 0
            }
            guard s.downloaded + bytes <= quota else { return false }
            s.downloaded += bytes
            return true
        }
    }

    var inFlight: Int { state.withLock { $0.inFlight } }
}
