import Attache
import AttacheFetch
import AttachePayload
import AttacheStore
import AttacheTesting
import Testing

/// Enrichment into a real SeaweedFS bucket: the payload's URLs are objects a device can read,
/// holding the validated bytes; a store that is down costs the attachment, by the deadline.
@Suite(.serialized) struct ObjectStoreTests {
    func objectStore(_ server: SeaweedFS) -> (S3Store.Location, S3Store.Endpoint) {
        (S3Store.Location("s3://campaigns/push/")!, S3Store.Endpoint(url: server.endpoint, signature: AWSSignature(
            accessKey: server.accessKey, secretKey: server.secretKey, region: "us-east-1")))
    }

    @Test func thePayloadsURLsAreObjectsHoldingTheValidatedBytes() async throws {
        let server = try SeaweedFS()
        defer { server.stop() }
        let h = try Harness()
        let e = try h.enrichment { $0.objectStore = objectStore(server) }
        defer { h.stop(e) }
        let emission = try await e.enrich(h.payload(#"{"aps":{"alert":"x","mutable-content":1},"image-url":"ORIGIN/animated.gif"}"#))
        #expect(emission.outcome == .enriched)
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

    @Test func aStoreThatIsDownIsStoreFailedByTheDeadline() async throws {
        let server = try SeaweedFS()
        let h = try Harness()
        let e = try h.enrichment {
            $0.objectStore = objectStore(server)
            $0.deadline = .seconds(2)
        }
        defer { h.stop(e) }
        server.stop()
        let input = h.payload(#"{"aps":{"alert":"x","mutable-content":1},"image-url":"ORIGIN/photo.jpg"}"#)
        let start = ContinuousClock.now
        let emission = try await e.enrich(input)
        #expect(emission.bytes == input)
        #expect(emission.reason == .storeFailed)
        #expect(start.duration(to: .now) < .seconds(2) + .seconds(1))
    }
}
