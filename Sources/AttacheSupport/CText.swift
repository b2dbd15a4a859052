extension String {
    /// The text a C call wrote into a buffer, up to its NUL (all of it when there is none); bytes
    /// that are not UTF-8 are replaced, never trusted.
    public init(cBuffer buffer: [CChar]) {
        self = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
