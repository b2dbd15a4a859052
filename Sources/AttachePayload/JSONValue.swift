/// A JSON value that keeps what a sender wrote: object key order, every key (known or not), and
/// the exact spelling of numbers (`1.0`, `1e3`, `-0` come back out as they went in).
public enum JSONValue: Sendable, Equatable {
    case object(JSONObject)
    case array([JSONValue])
    case string(String)
    /// The number's text, exactly as it appeared.
    case number(String)
    case bool(Bool)
    case null

    public var objectValue: JSONObject? {
        if case .object(let o) = self { return o }
        return nil
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    public var numberText: String? {
        if case .number(let n) = self { return n }
        return nil
    }

    /// A number as Double, or a string holding one (senders put `"1"` where `1` belongs).
    public var doubleValue: Double? {
        switch self {
        case .number(let n): return Double(n)
        case .string(let s): return Double(s)
        default: return nil
        }
    }

    public var boolValue: Bool? {
        switch self {
        case .bool(let b): return b
        case .number(let n): return Double(n).map { $0 != 0 }
        case .string(let s): return s == "true" ? true : s == "false" ? false : nil
        default: return nil
        }
    }

    public static func int(_ value: Int) -> JSONValue { .number(String(value)) }

    /// A compact decimal spelling of a Double (no exponent for the ranges payloads use).
    public static func double(_ value: Double) -> JSONValue {
        if value == value.rounded(), abs(value) < 1e15 { return .number(String(Int(value))) }
        var text = String(value)
        if text.contains("e") { text = String(format6: value) }
        return .number(text)
    }
}

extension String {
    /// Fixed six-decimal formatting without Foundation, trailing zeros trimmed.
    init(format6 value: Double) {
        let scaled = (value * 1_000_000).rounded()
        let negative = scaled < 0
        let magnitude = Int(abs(scaled))
        var fraction = String(magnitude % 1_000_000)
        fraction = String(repeating: "0", count: 6 - fraction.count) + fraction
        while fraction.hasSuffix("0") { fraction.removeLast() }
        self = (negative ? "-" : "") + String(magnitude / 1_000_000) + (fraction.isEmpty ? "" : "." + fraction)
    }
}

/// A JSON object as an ordered list of members. Lookups return the first member of a name;
/// duplicates are kept and written back out as they came.
public struct JSONObject: Sendable, Equatable {
    public struct Member: Sendable, Equatable {
        public var key: String
        public var value: JSONValue
        public init(key: String, value: JSONValue) {
            self.key = key
            self.value = value
        }
    }

    public var members: [Member]

    public init(_ members: [Member] = []) {
        self.members = members
    }

    public init(_ pairs: KeyValuePairs<String, JSONValue>) {
        members = pairs.map { Member(key: $0.key, value: $0.value) }
    }

    public var keys: [String] { members.map(\.key) }

    public func contains(_ key: String) -> Bool { members.contains { $0.key == key } }

    /// Reading finds the first member of that name; writing replaces it in place (keeping its
    /// position), appends a new member at the end, or removes it when set to nil.
    public subscript(key: String) -> JSONValue? {
        get { members.first { $0.key == key }?.value }
        set {
            let index = members.firstIndex { $0.key == key }
            switch (index, newValue) {
            case (let i?, let v?): members[i].value = v
            case (let i?, nil): members.remove(at: i)
            case (nil, let v?): members.append(Member(key: key, value: v))
            case (nil, nil): break
            }
        }
    }
}

/// A step into a JSON document: an object key or an array index.
public enum JSONPathComponent: Sendable, Hashable, CustomStringConvertible {
    case key(String)
    case index(Int)

    public var description: String {
        switch self {
        case .key(let k): return k
        case .index(let i): return "[\(i)]"
        }
    }
}

extension JSONValue {
    public subscript(path path: [JSONPathComponent]) -> JSONValue? {
        var current: JSONValue? = self
        for step in path {
            switch (step, current) {
            case (.key(let k), .object(let o)?): current = o[k]
            case (.index(let i), .array(let a)?): current = a.indices.contains(i) ? a[i] : nil
            default: return nil
            }
        }
        return current
    }

    /// Replaces the value at `path`; returns false (changing nothing) when the path does not exist.
    @discardableResult
    public mutating func replace(at path: ArraySlice<JSONPathComponent>, with value: JSONValue) -> Bool {
        guard let step = path.first else {
            self = value
            return true
        }
        switch (step, self) {
        case (.key(let k), .object(var o)):
            guard var child = o[k], child.replace(at: path.dropFirst(), with: value) else { return false }
            o[k] = child
            self = .object(o)
            return true
        case (.index(let i), .array(var a)):
            guard a.indices.contains(i), a[i].replace(at: path.dropFirst(), with: value) else { return false }
            self = .array(a)
            return true
        default:
            return false
        }
    }
}
