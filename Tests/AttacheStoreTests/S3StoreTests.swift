import AttacheFetch
import AttacheSupport
import AttacheTesting
import Testing
@testable import AttacheStore

/// Against a real SeaweedFS (`make test-deps`), on loopback, where unsigned writes are refused.
@Suite(.serialized) struct S3StoreTests {
    func store(_ server: SeaweedFS, secret: String? = nil, prefix: String = "media/") throws -> (S3Store, FetchEngine) {
        let engine = try S3Store.makeEngine(tempDirectory: try makeTempDirectory())
        let endpoint = S3Store.Endpoint(url: server.endpoint, signature: AWSSignature(
            accessKey: server.accessKey, secretKey: secret ?? server.secretKey, region: "us-east-1"))
        return (S3Store(location: S3Store.Location("s3://attache-test/\(prefix)")!, endpoint: endpoint, publicBaseURL: nil, engine: engine), engine)
    }

    /// What a device gets from the public URL.
    func download(_ url: String) async throws -> FetchResult {
        let engine = try FetchEngine(configuration: .init(policy: AddressPolicy(allowed: [CIDR("127.0.0.1/32")!])))
        defer { engine.shutdown() }
        return try await engine.fetch(FetchRequest(url: url), deadline: .now + .seconds(10))
    }

    @Test func storesContentAddressedObjectsDevicesCanRead() async throws {
        try await SeaweedFS.with { server in
            try await server.createBucket("attache-test")
            let (store, engine) = try store(server)
            defer { engine.shutdown() }
            let bytes = Fixtures.bytes("photo.jpg")
            let stored = try await store.put(bytes, fileExtension: "jpg", deadline: .now + .seconds(10))
            #expect(try stored.name == "\(SHA256Hasher.hex(bytes)).jpg")
            #expect(stored.url == "\(server.endpoint)/attache-test/media/\(stored.name)")
            let fetched = try await download(stored.url)
            #expect(try fetched.body.readAll() == bytes)
            #expect(fetched.contentType == "image/jpeg")
            // Again: found by its HEAD, the same URL.
            #expect(try await store.put(bytes, fileExtension: "jpg", deadline: .now + .seconds(10)) == stored)
            #expect(await store.unavailability() == nil)
        }
    }

    /// A body spilled to a file is uploaded from the file: the bytes handed in are not what is
    /// sent (here, deliberately, none), and a file that is not there fails the write.
    @Test func aSpilledBodyIsUploadedFromItsFile() async throws {
        try await SeaweedFS.with { server in
            try await server.createBucket("attache-test")
            let (store, engine) = try store(server)
            defer { engine.shutdown() }
            let bytes = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7919 >> 3) }
            let file = try makeTempDirectory() + "/body"
            try writeFileAtomically(file, bytes)
            let stored = try await store.put([], fileExtension: "gif", sha256: try SHA256Hasher.hex(bytes), file: file,
                                             deadline: .now + .seconds(10))
            #expect(try await download(stored.url).body.readAll() == bytes)
            await #expect(throws: StoreError.self) {
                try await store.put([], fileExtension: "gif", sha256: try SHA256Hasher.hex([1]), file: file + ".gone",
                                    deadline: .now + .seconds(10))
            }
        }
    }

    @Test func aWrongSecretIsRefusedAndNothingIsStored() async throws {
        try await SeaweedFS.with { server in
            let (store, engine) = try store(server, secret: "not-the-secret")
            defer { engine.shutdown() }
            let bytes = Array("never stored".utf8)
            let refused = await #expect(throws: StoreError.self) { try await store.put(bytes, fileExtension: "png", deadline: .now + .seconds(10)) }
            #expect(refused?.code == .refused && refused?.status == 403, "\(String(describing: refused))")
            #expect(refused?.key?.hasSuffix(".png") == true)
            await #expect(throws: FetchError.self) { try await download("\(server.endpoint)/attache-test/media/\(try SHA256Hasher.hex(bytes)).png") }
            #expect(await store.unavailability() != nil)
        }
    }

    /// A store that is gone fails the write by the deadline (+ 1 s), never later.
    @Test func aStoppedStoreFailsWithinTheDeadline() async throws {
        try await SeaweedFS.with { server in
            let (store, engine) = try store(server)
            defer { engine.shutdown() }
            await server.halt()
            let deadline = ContinuousClock.now + .seconds(2)
            let error = await #expect(throws: StoreError.self) { try await store.put([1, 2, 3], fileExtension: "gif", deadline: deadline) }
            #expect(error?.code == .unreachable || error?.code == .deadlinePassed, "\(String(describing: error))")
            #expect(ContinuousClock.now < deadline + .seconds(1))
            #expect(await store.unavailability() != nil)
        }
    }

    @Test(arguments: [("s3://b", "b", ""), ("s3://b/", "b", ""), ("s3://b/p", "b", "p/"), ("s3://b.x/p/q/", "b.x", "p/q/")])
    func locations(_ text: String, _ bucket: String, _ prefix: String) {
        #expect(S3Store.Location(text) == S3Store.Location(text))
        #expect(S3Store.Location(text)?.bucket == bucket)
        #expect(S3Store.Location(text)?.prefix == prefix)
    }

    @Test func badLocationsAndEnvironments() {
        #expect(S3Store.Location("s3://") == nil)
        #expect(S3Store.Location("https://b/p") == nil)
        let missing = #expect(throws: StoreError.self) { try S3Store.Endpoint.fromEnvironment { _ in nil } }
        #expect(missing?.code == .misconfigured)
        let env = ["AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "AWS_DEFAULT_REGION": "eu-west-1"]
        let endpoint = try? S3Store.Endpoint.fromEnvironment { env[$0] }
        #expect(endpoint?.url == "https://s3.eu-west-1.amazonaws.com")
        #expect(endpoint?.signature.region == "eu-west-1")
    }
}
