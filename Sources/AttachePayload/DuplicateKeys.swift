/// Duplicate keys. JSON allows them, but which one a device's parser keeps (the first, the last,
/// an error) is not something to bet on: where Attache reads or writes, a repeated key makes the
/// payload ambiguous, and it goes out unchanged. Elsewhere duplicates are the sender's custom data
/// and pass through as they came.
extension JSONObject {
    /// The first key that appears more than once.
    public func firstRepeatedKey() -> String? { firstRepeatedKey(where: { _ in true }) }

    /// The first key that appears more than once among those `counted` accepts. A predicate, not
    /// a set: the runtime asks this of every payload about two or three keys, and a set made for
    /// each question cost more in hashing than the question.
    public func firstRepeatedKey(where counted: (String) -> Bool) -> String? {
        // Most objects of a payload hold a handful of keys: compared pairwise they need no
        // hashing, which for each payload's few objects cost more than the rest of this check.
        if members.count <= 12 {
            for (i, member) in members.enumerated() where counted(member.key) {
                if members[..<i].contains(where: { $0.key == member.key }) { return member.key }
            }
            return nil
        }
        var seen = Set<String>()
        for member in members where counted(member.key) {
            if !seen.insert(member.key).inserted { return member.key }
        }
        return nil
    }
}

extension JSONValue {
    /// The first repeated key in any object of this value, however deep.
    public var firstRepeatedKey: String? {
        switch self {
        case .object(let o):
            if let key = o.firstRepeatedKey() { return key }
            return o.members.lazy.compactMap(\.value.firstRepeatedKey).first
        case .array(let items):
            return items.lazy.compactMap(\.firstRepeatedKey).first
        default:
            return nil
        }
    }
}

extension Payload {
    /// A repeated key where the runtime reads or writes: `aps` or the attachments key at the top,
    /// anything inside `aps.alert`, `alert` or `mutable-content` in `aps`.
    public func repeatedAPNsKey(attachmentsKey: String) -> String? {
        if let key = root.firstRepeatedKey(where: { $0 == "aps" || $0 == attachmentsKey }) { return key }
        guard let aps else { return nil }
        if let key = aps.firstRepeatedKey(where: { $0 == "alert" || $0 == "mutable-content" }) { return "aps.\(key)" }
        return aps["alert"]?.firstRepeatedKey.map { "aps.alert.\($0)" }
    }
}

extension DialectReader {
    static func topLevelKeys(_ genericKeys: [String]) -> Set<String> {
        Set(vendorTopLevelKeys + namedKeys(in: genericKeys).map { $0.hasPrefix("/") ? JSONPointer($0)?.tokens.first ?? $0 : $0 })
    }

    /// A repeated key where a dialect reads: among its top-level keys, or anywhere inside one.
    public func repeatedKey(in root: JSONObject) -> String? {
        let keys = topLevelKeys
        if let key = root.firstRepeatedKey(where: keys.contains) { return key }
        for member in root.members where keys.contains(member.key) {
            if let key = member.value.firstRepeatedKey { return "\(member.key).\(key)" }
        }
        return nil
    }
}
