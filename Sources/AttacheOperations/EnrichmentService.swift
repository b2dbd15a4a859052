import Attache
import AttacheEnrichment
import ServiceLifecycle

/// The enrichment (its fetch engine's thread, its temp files) as a member of the service group:
/// listed before the HTTP server, it is shut down after it (the group stops its services in
/// reverse order), so requests still being answered keep their fetches until they are done.
public struct EnrichmentService: Service {
    public let enrichment: Enrichment

    public init(_ enrichment: Enrichment) {
        self.enrichment = enrichment
    }

    public func run() async throws {
        // Returns when the group shuts down gracefully; throws when it is cancelled instead
        // (another service failed): the engine stops either way.
        try? await gracefulShutdown()
        await enrichment.shutdownGracefully()
    }
}
