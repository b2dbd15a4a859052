/// One HTTP response header line as curl hands it over (bytes, line ending included), read
/// without making Strings: a thousand small transfers see six thousand of these.
struct HeaderLine {
    private let bytes: UnsafeRawBufferPointer

    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    /// The line without its trailing CR/LF.
    private var content: Slice<UnsafeRawBufferPointer> {
        var end = bytes.endIndex
        while end > bytes.startIndex, bytes[end - 1] == 0x0A || bytes[end - 1] == 0x0D { end -= 1 }
        return bytes[bytes.startIndex..<end]
    }

    /// The empty line that ends a header block.
    var isBlank: Bool { content.isEmpty }

    func hasPrefix(_ prefix: StaticString) -> Bool {
        let p = UnsafeRawBufferPointer(start: prefix.utf8Start, count: prefix.utf8CodeUnitCount)
        return bytes.count >= p.count && bytes.prefix(p.count).elementsEqual(p)
    }

    /// The number after the first space of a status line (`HTTP/1.1 200 OK`, `HTTP/2 404`).
    var statusCode: Int? {
        let line = content
        guard let space = line.firstIndex(of: 0x20) else { return nil }
        let digits = line[(space + 1)...].prefix { $0 >= 0x30 && $0 <= 0x39 }
        guard !digits.isEmpty, digits.count <= 3 else { return nil }
        return digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
    }

    /// The value of the field `name` (given in lower case) with surrounding blanks removed, or
    /// nil when the line is another field.
    func value(of name: StaticString) -> Slice<UnsafeRawBufferPointer>? {
        let line = content
        let n = name.utf8CodeUnitCount
        guard line.count > n, line[line.startIndex + n] == UInt8(ascii: ":") else { return nil }
        let wanted = UnsafeRawBufferPointer(start: name.utf8Start, count: n)
        for (a, b) in zip(line.prefix(n), wanted) where a | 0x20 != b {  // ASCII case fold
            return nil
        }
        let isBlank: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 }
        var value = line[(line.startIndex + n + 1)...]
        while let first = value.first, isBlank(first) { value = value.dropFirst() }
        while let last = value.last, isBlank(last) { value = value.dropLast() }
        return value
    }
}
