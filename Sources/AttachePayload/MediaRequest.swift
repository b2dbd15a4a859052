/// Apple's attachment options, as a sender's dialect expressed them.
public struct MediaOptions: Sendable, Equatable {
    /// Thumbnail clipping rectangle in 0–1 units of the image (Airship `options.crop`).
    public struct ClipRect: Sendable, Hashable {
        public var x, y, width, height: Double
        public init(x: Double, y: Double, width: Double, height: Double) {
            self.x = x
            self.y = y
            self.width = width
            self.height = height
        }

        /// Clamped into the unit square; nil when nothing is left.
        public var clamped: ClipRect? {
            let x0 = min(max(x, 0), 1), y0 = min(max(y, 0), 1)
            let x1 = min(max(x + width, 0), 1), y1 = min(max(y + height, 0), 1)
            guard x1 > x0, y1 > y0 else { return nil }
            return ClipRect(x: x0, y: y0, width: x1 - x0, height: y1 - y0)
        }
    }

    public var clippingRect: ClipRect?
    /// Seconds for movies, frame number for animated images.
    public var thumbnailTime: Double?
    public var thumbnailHidden: Bool?
    /// What the sender said the media is (`jpg`, `gif`, `video`); a hint only, never trusted.
    public var typeHint: String?

    public init(clippingRect: ClipRect? = nil, thumbnailTime: Double? = nil, thumbnailHidden: Bool? = nil, typeHint: String? = nil) {
        self.clippingRect = clippingRect
        self.thumbnailTime = thumbnailTime
        self.thumbnailHidden = thumbnailHidden
        self.typeHint = typeHint
    }
}

public enum Dialect: String, Sendable, CaseIterable {
    case fcm, onesignal, airship, braze, clevertap, iterable, customerio, klaviyo, pushwoosh, batch, mixpanel, notifee, expo
    case salesforce, adobe, generic
}

/// One media URL a payload asks for, where it was found, and how to attach it.
public struct MediaRequest: Sendable, Equatable {
    public var id: String
    public var url: String
    public var dialect: Dialect
    /// Where the URL sits in the payload; rewritten to the validated copy when a public base URL is set.
    public var locations: [[JSONPathComponent]]
    public var options: MediaOptions
    /// The vendor's type field beside the URL, rewritten with it.
    public var typeHint: TypeHintField?

    public init(id: String, url: String, dialect: Dialect, locations: [[JSONPathComponent]], options: MediaOptions = .init(),
                typeHint: TypeHintField? = nil) {
        self.id = id
        self.url = url
        self.dialect = dialect
        self.locations = locations
        self.options = options
        self.typeHint = typeHint
    }
}
