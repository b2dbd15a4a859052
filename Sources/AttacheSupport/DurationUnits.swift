extension Duration {
    /// The duration in milliseconds (fractions kept): what reports, logs and libcurl's options are in.
    public var milliseconds: Double {
        Double(components.seconds) * 1000 + Double(components.attoseconds) / 1e15
    }

    /// The duration in seconds (fractions kept).
    public var seconds: Double { milliseconds / 1000 }
}

extension Duration {
    /// Whole nanoseconds (what NATS's configuration is in); saturates past ±292 years.
    public var nanoseconds: Int64 {
        let (seconds, overflow) = components.seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return components.seconds < 0 ? .min : .max }
        return seconds.addingReportingOverflow(components.attoseconds / 1_000_000_000).partialValue
    }
}
