extension String {
    /// Without one trailing `/` (`https://cdn.example.com/media/` → `…/media`), so that a base
    /// URL or a directory joins with `/` + a name whichever way it was written; `/` itself stays.
    public var withoutTrailingSlash: String {
        hasSuffix("/") && count > 1 ? String(dropLast()) : self
    }
}
