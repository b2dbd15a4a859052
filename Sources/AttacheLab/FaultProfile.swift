/// A fault the lab's origin puts on the media while a payload runs: a name for the page, a label,
/// and the origin's query (`OriginFault`).
public struct FaultProfile: Sendable, Equatable {
    public var name: String
    public var label: String
    public var query: String

    public init(name: String, label: String, query: String) {
        self.name = name
        self.label = label
        self.query = query
    }

    /// What a media URL meets on a phone's bad day. `none` fetches the URL as it is.
    public static let all: [FaultProfile] = [
        .init(name: "none", label: "no fault", query: ""),
        .init(name: "slow-first-byte", label: "slow first byte (1.5 s)", query: "delay=1500"),
        .init(name: "throttled", label: "throttled to 32 KB/s", query: "rate=32768"),
        .init(name: "3g", label: "3G (300 ms, 96 KB/s)", query: "profile=3g"),
        .init(name: "stall", label: "stalls mid-body", query: "stall=50%"),
        .init(name: "truncated", label: "truncated body", query: "truncate=50%"),
        .init(name: "wrong-type", label: "wrong content type", query: "type=text/html"),
        .init(name: "redirects", label: "redirect chain (3)", query: "redirect=3"),
        .init(name: "404", label: "404 not found", query: "status=404"),
        .init(name: "500", label: "500 server error", query: "status=500"),
    ]

    public static func named(_ name: String) -> FaultProfile? {
        all.first { $0.name == name }
    }
}
