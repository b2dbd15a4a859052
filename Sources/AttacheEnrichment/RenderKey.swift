import AttacheMedia
import AttachePayload

/// What one cached result is the result of: the same key, the same attachment. Everything that
/// shapes the rendition is a field, and the render options go in whole, so an option added to
/// `RenderOptions` is part of the key without anyone adding it here.
public struct RenderKey: Hashable, Sendable {
    /// A tenant's cache namespace ("": the shared one).
    public var namespace: String
    public var url: String
    /// The renditions as this media is rendered (its clipping rect and the Android copy included).
    public var render: RenderOptions
    /// The payload's time for a movie's poster frame.
    public var thumbnailTime: Double?
    public var posterMode: PosterMode
    /// A tenant's own caps, when it has them (nil: the service's, which every other key shares).
    public var limits: MediaLimits?
    /// Where the result is stored: a result is only reused where its URLs lead.
    public var urlBase: String

}
