/// Durations as people type them: `300ms`, `2s`, `1.5s`, `2m`; a bare number is seconds.
public enum DurationText {
    public static func parse(_ text: String) -> Duration? {
        let t = text.trimmingCharacters(in: " ")
        let units: [(String, Double)] = [("ms", 1e-3), ("s", 1), ("m", 60)]
        for (suffix, scale) in units where t.hasSuffix(suffix) {
            guard let v = Double(t.dropLast(suffix.count)), v >= 0, v.isFinite else { return nil }
            return .nanoseconds(Int64((v * scale * 1e9).rounded()))
        }
        guard let v = Double(t), v >= 0, v.isFinite else { return nil }
        return .nanoseconds(Int64((v * 1e9).rounded()))
    }

    /// A duration as `parse` reads it back: `2s`, `1.5s`, `300ms` (an hour is `3600s`).
    public static func format(_ duration: Duration) -> String {
        let ms = duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
        if ms % 1000 == 0 { return "\(ms / 1000)s" }
        if ms >= 1000, ms % 100 == 0 { return "\(Double(ms) / 1000)s" }
        return "\(ms)ms"
    }
}

extension String {
    func trimmingCharacters(in set: Character) -> String {
        String(drop { $0 == set }.reversed().drop { $0 == set }.reversed())
    }
}
