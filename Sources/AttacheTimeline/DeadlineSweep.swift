import Attache
import AttacheEnrichment
import AttacheSupport
/// Runs one payload across deadlines and finds, for each attachment, the smallest deadline at
/// which it makes it: the budget a payload needs on a given network.
public struct DeadlineSweep: Sendable {
    public struct Run: Sendable {
        public var deadline: Duration
        public var outcome: Outcome
        /// Attachment id → attached in this run.
        public var attached: [String: Bool]
        public var ids: [String]
    }

    /// `from`, then every `step`, up to `to` (both included).
    public static func deadlines(from: Duration, to: Duration, step: Duration) -> [Duration] {
        guard step > .zero, to >= from else { return [from] }
        var out: [Duration] = []
        var d = from
        while d <= to {
            out.append(d)
            d += step
        }
        if out.last != to { out.append(to) }
        return out
    }

    /// Parses `100ms...5s`.
    public static func range(_ text: String) -> (Duration, Duration)? {
        let parts = text.components(separatedBy3Dots: ())
        guard parts.count == 2, let a = DurationText.parse(parts[0]), let b = DurationText.parse(parts[1]), a > .zero, b >= a else {
            return nil
        }
        return (a, b)
    }

    public let enrichment: Enrichment

    public init(enrichment: Enrichment) {
        self.enrichment = enrichment
    }

    public func run(_ bytes: [UInt8], deadlines: [Duration], each: (Run) -> Void = { _ in }) async throws -> [Run] {
        var runs: [Run] = []
        for deadline in deadlines {
            let emission = try await enrichment.enrich(bytes, budget: deadline)
            let ids = emission.report.attachments.map(\.id)
            var attached: [String: Bool] = [:]
            for a in emission.report.attachments { attached[a.id] = a.outcome == .attached }
            let run = Run(deadline: deadline, outcome: emission.outcome, attached: attached, ids: ids)
            each(run)
            runs.append(run)
        }
        return runs
    }

    /// For each attachment, the smallest deadline from which it was attached in every later run
    /// too (nil: never made it).
    public static func flipPoints(_ runs: [Run]) -> [(id: String, deadline: Duration?)] {
        let ids = runs.first?.ids ?? []
        return ids.map { id in
            var flip: Duration?
            for run in runs {
                if run.attached[id] == true { flip = flip ?? run.deadline } else { flip = nil }
            }
            return (id, flip)
        }
    }
}

extension String {
    /// Splits on "..." (FoundationEssentials-free).
    func components(separatedBy3Dots: Void) -> [String] {
        guard let r = firstRange(of: "...") else { return [self] }
        return [String(self[..<r.lowerBound]), String(self[r.upperBound...])]
    }
}
