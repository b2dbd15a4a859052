/// A JSON Pointer (RFC 6901): `/a/b/0/c`, with `~1` for `/` and `~0` for `~` inside a name. How
/// `--media-key` reaches a URL nested in a format Attache has no dialect for.
public struct JSONPointer: Sendable, Equatable {
    public let tokens: [String]

    /// Nil when the text is not a pointer (it must be empty or start with `/`, and `~` only
    /// before `0` or `1`).
    public init?(_ text: String) {
        guard text.isEmpty || text.hasPrefix("/") else { return nil }
        var tokens: [String] = []
        for raw in text.split(separator: "/", omittingEmptySubsequences: false).dropFirst() {
            var token = "", escape = false
            for c in raw {
                if escape {
                    guard c == "0" || c == "1" else { return nil }
                    token.append(c == "0" ? "~" : "/")
                    escape = false
                } else if c == "~" {
                    escape = true
                } else {
                    token.append(c)
                }
            }
            if escape { return nil }
            tokens.append(token)
        }
        self.tokens = tokens
    }

    /// The path it names in `value`: a token is an array index where the value there is an array
    /// (digits, no leading zero), else an object key. Nil when it names nothing.
    public func path(in value: JSONValue) -> [JSONPathComponent]? {
        var path: [JSONPathComponent] = []
        var current = value
        for token in tokens {
            let step: JSONPathComponent
            if case .array = current {
                guard let index = Int(token), index >= 0, String(index) == token else { return nil }
                step = .index(index)
            } else {
                step = .key(token)
            }
            guard let next = current[path: [step]] else { return nil }
            path.append(step)
            current = next
        }
        return path
    }
}
