@testable import Attache
@testable import AttacheEnrichment
import AttacheFetch
import AttachePayload
import AttacheStore
import AttacheTesting
import Testing

/// Enrichment into a real SeaweedFS bucket: the payload's URLs are objects a device can read,
/// holding the validated bytes; a store that is down costs the attachment, by the deadline.
@Suite(.serialized) struct ObjectStoreTests {
    func objectStore(_ server: SeaweedFS) -> StoreLocation {
        .bucket(S3Store.Location("s3://campaigns/push/")!, S3Store.Endpoint(url: server.endpoint, signature: AWSSignature(
            accessKey: server.accessKey, secretKey: server.secretKey, region: "us-east-1")))
    }

    @Test func thePayloadsURLsAreObjectsHoldingTheValidatedBytes() async throws {
        try await SeaweedFS.with { server in
            let h = try Harness()
            try await server.createBucket("campaigns")
            let e = try h.enrichment {
                $0.storage.location = objectStore(server)
                $0.runtime.deadlinePolicy.default = .seconds(20)
            }
            defer { h.stop(e) }
            let emission = try await e.enrich(h.payload(#"{"aps":{"alert":"x","mutable-content":1},"image-url":"ORIGIN/animated.gif"}"#))
            #expect(emission.outcome == .enriched, "\(emission.report.json)")
            let entry = try #require(try json(emission.bytes)["attachments"]?.arrayValue?.first?.objectValue)
            let url = try #require(entry["url"]?.stringValue)
            #expect(url.hasPrefix("\(server.endpoint)/campaigns/push/"))
            let device = try FetchEngine(configuration: .init(policy: AddressPolicy(allowed: [CIDR("127.0.0.1/32")!])))
            defer { device.shutdown() }
            let fetched = try await device.fetch(FetchRequest(url: url), deadline: .now + .seconds(10))
            #expect(try fetched.body.readAll() == Fixtures.bytes("animated.gif"))  // a GIF goes as it came
            let thumbnail = try #require(entry["thumbnail"]?.objectValue?["url"]?.stringValue)
            #expect(try await device.fetch(FetchRequest(url: thumbnail), deadline: .now + .seconds(10)).status == 200)
        }
    }

    @Test func aStoreThatIsDownIsStoreFailedByTheDeadline() async throws {
        try await SeaweedFS.with { server in
            let h = try Harness()
            let e = try h.enrichment {
                $0.storage.location = objectStore(server)
                $0.runtime.deadlinePolicy.default = .seconds(5)  // room for the fetch and decode on a busy machine: the reason is the store's
            }
            defer { h.stop(e) }
            await server.halt()
            let input = h.payload(#"{"aps":{"alert":"x","mutable-content":1},"image-url":"ORIGIN/photo.jpg"}"#)
            let start = ContinuousClock.now
            let emission = try await e.enrich(input)
            #expect(emission.bytes == input)
            #expect(emission.reason == .storeFailed)
            #expect(start.duration(to: .now) < .seconds(5) + .seconds(1))
        }
    }

    /// Two replicas (each its own enrichment and in-memory cache) sharing one bucket: the second
    /// finds the first one's result in the store and fetches nothing from the origin.
    @Test func aSecondReplicaFetchesNothing() async throws {
        try await SeaweedFS.with { server in
            try await server.createBucket("campaigns")
            let h = try Harness()
            defer { h.stop() }
            func replica() throws -> Enrichment {
                try h.enrichment {
                    $0.storage.location = objectStore(server)
                    $0.cache = MediaCache.Configuration(timeToLive: .seconds(3600), maxEntries: 100)
                    $0.runtime.deadlinePolicy.default = .seconds(20)
                    $0.storage.directory = try! makeTempDirectory()  // each replica its own scratch space
                }
            }
            let input = h.payload(#"{"aps":{"alert":"x","mutable-content":1},"image-url":"ORIGIN/photo.jpg"}"#)
            let first = try replica()
            let a = try await first.enrich(input)
            first.shutdown()
            #expect(a.outcome == .enriched, "\(a.report.json)")
            #expect(a.report.attachments.first?.cache == .miss)
            #expect(h.origin.statistics.requests == 1)

            let second = try replica()
            defer { second.shutdown() }
            let b = try await second.enrich(input)
            #expect(b.outcome == .enriched)
            #expect(b.report.attachments.first?.cache == .store)
            #expect(h.origin.statistics.requests == 1)  // nothing fetched again
            #expect(b.bytes == a.bytes)  // the same URLs, the same payload
        }
    }

    /// An expired record is not used: the media is fetched again.
    @Test func expiredRecordsAreNotUsed() throws {
        let media = CachedMedia(entry: AttachmentEntry(id: "", url: "u", type: "public.jpeg", bytes: 3), kind: .image, format: .jpeg, bytes: 3)
        let record = SharedResults.encode(media, at: 1_000)
        #expect(SharedResults.decode(record, now: 1_000 + 3599, timeToLive: .seconds(3600))?.entry.url == "u")
        #expect(SharedResults.decode(record, now: 1_000 + 3600, timeToLive: .seconds(3600)) == nil)
        #expect(SharedResults.decode(Array("{}".utf8), now: 1_000, timeToLive: .seconds(3600)) == nil)
    }
}
