/// A vendor's field that tells its SDK what the media is. The SDK names the file it saves by it
/// (or hands it to iOS as the attachment's type hint), and iOS judges an attachment by that: when
/// the URL is rewritten to a copy in another format, the field is rewritten with it, in the form
/// the SDK expects.
public struct TypeHintField: Sendable, Equatable {
    public enum Form: Sendable, Equatable {
        /// A file extension: `jpg`, `png`, `gif`, `mp4` (Braze `ab.att.type`, Klaviyo `rich-media-type`).
        case fileExtension
        /// CleverTap's `ct_mediaType`: `image`, `gif`, `video` or `audio`.
        case cleverTapKind
        /// A uniform type identifier (`public.jpeg`), or a MIME type (`image/jpeg`) where the payload
        /// used one (Batch `at.t`, Notifee `typeHint`).
        case typeIdentifier
        /// Whatever form the payload's value has: a MIME type, a UTI, else a file extension (the
        /// companion type key of a `--media-key`, for an SDK Attache does not know).
        case asWritten
    }

    public var path: [JSONPathComponent]
    public var form: Form
    /// Added when the payload has none: the SDK's default, or its refusal to attach without one,
    /// would be wrong for the copy.
    public var addWhenMissing: Bool

    public init(path: [JSONPathComponent], form: Form, addWhenMissing: Bool = false) {
        self.path = path
        self.form = form
        self.addWhenMissing = addWhenMissing
    }

    /// The media as the field describes it.
    public struct Media: Sendable {
        public var kind: String
        public var fileExtension: String
        public var uti: String
        public var mime: String

        public init(kind: String, fileExtension: String, uti: String, mime: String) {
            self.kind = kind
            self.fileExtension = fileExtension
            self.uti = uti
            self.mime = mime
        }
    }

    /// The field's value for `media`, given what the payload had there.
    public func value(for media: Media, replacing existing: String?) -> String {
        switch form {
        case .fileExtension: return media.fileExtension
        case .cleverTapKind: return media.uti == "com.compuserve.gif" ? "gif" : media.kind
        case .typeIdentifier: return existing?.contains("/") == true ? media.mime : media.uti
        case .asWritten:
            guard let existing else { return media.fileExtension }
            if existing.contains("/") { return media.mime }
            return existing.contains(".") ? media.uti : media.fileExtension
        }
    }

    /// Writes the value into `root`: replaced where the field is, added when missing and allowed
    /// (its parent object must exist).
    public func write(_ media: Media, into root: inout JSONValue) {
        let existing = root[path: path]
        guard existing != nil || addWhenMissing else { return }
        let value = JSONValue.string(self.value(for: media, replacing: existing?.stringValue))
        if existing != nil {
            root.replace(at: path[...], with: value)
        } else if case .key(let key)? = path.last, case .object(var parent)? = root[path: Array(path.dropLast())] {
            parent[key] = value
            root.replace(at: path.dropLast(), with: .object(parent))
        }
    }
}
