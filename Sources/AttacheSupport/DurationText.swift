/// Durations as people type them: `300ms`, `2s`, `1.5s`, `2m`. A number needs its unit (`0` alone
/// is zero whatever the unit): `1500` would be 25 minutes to someone used to seconds and 1.5 s to
/// someone who has just written `Attache-Deadline-Ms: 1500`.
public enum DurationText {
    public static func parse(_ text: String) -> Duration? {
        let t = text.trimmingCharacters(in: " ")
        let units: [(String, Double)] = [("ms", 1e-3), ("s", 1), ("m", 60)]
        for (suffix, scale) in units where t.hasSuffix(suffix) {
            guard let v = Double(t.dropLast(suffix.count)), v >= 0, v.isFinite, v * scale < 1e9 else { return nil }
            return .nanoseconds(Int64((v * scale * 1e9).rounded()))
        }
        guard let v = Double(t), v == 0 else { return nil }
        return .zero
    }

    /// Why `text` is not a duration, in words that show how to write it.
    public static func problem(_ text: String) -> String {
        "\(text) \(hint(text))"
    }

    /// `problem` without the text itself: `has no unit: write 1500ms …`, `is not a duration: …`.
    public static func hint(_ text: String) -> String {
        let t = text.trimmingCharacters(in: " ")
        if let v = Double(t), v.isFinite, v > 0 {
            return "has no unit: write \(t)ms for milliseconds or \(t)s for seconds"
        }
        return "is not a duration: write it with a unit, as 300ms, 2s, 1.5s or 2m"
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
