/// Where media is stored, decided once from `--store`: the media directory itself, or an
/// S3-compatible bucket (the media directory then only holds downloads while they are checked).
public enum StoreLocation: Sendable {
    case directory
    case bucket(S3Store.Location, S3Store.Endpoint)

    /// `s3://BUCKET/PREFIX` with its endpoint and credentials from `environment` (the standard AWS
    /// variables); anything else is a directory, returned as `.directory` with its path.
    public static func parse(_ text: String, environment: (String) -> String?) throws -> (StoreLocation, directory: String?) {
        guard text.hasPrefix("s3://") else { return (.directory, text) }
        guard let location = S3Store.Location(text) else { throw StoreError(.misconfigured, "\(text) is not s3://BUCKET/PREFIX") }
        return (.bucket(location, try S3Store.Endpoint.fromEnvironment(environment)), nil)
    }

    /// The store is a local directory: the service serves it under `/media` and judges its
    /// readiness by its free space; a bucket serves itself and is asked.
    public var isLocal: Bool {
        if case .directory = self { return true }
        return false
    }
}

/// Where an enrichment's results go, and under which URL devices read them.
public struct StoreConfiguration: Sendable {
    /// The file store's directory, and in any case where the scratch space (downloads, writes in
    /// progress) lives.
    public var directory: String
    /// The directory itself, or an S3-compatible bucket.
    public var location: StoreLocation
    /// What stored media's URLs start with; nil: `file://` URLs, or the bucket's own.
    public var publicBaseURL: String?

    public init(directory: String = "./attache-media", location: StoreLocation = .directory, publicBaseURL: String? = nil) {
        self.directory = directory
        self.location = location
        self.publicBaseURL = publicBaseURL
    }
}
