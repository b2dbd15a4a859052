extension Duration {
    /// The duration in milliseconds (fractions kept): what reports, logs and libcurl's options are in.
    public var milliseconds: Double {
        Double(components.seconds) * 1000 + Double(components.attoseconds) / 1e15
    }

    /// The duration in seconds (fractions kept).
    public var seconds: Double { milliseconds / 1000 }
}
