import AttacheSupport
import AttacheTesting
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import AttacheStore

@Suite struct FileStoreTests {
    /// FIPS 180-2 test vectors, and one that spans two blocks.
    @Test(arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
    ])
    func sha256(_ text: String, _ hex: String) throws {
        #expect(try SHA256Hasher.hex(Array(text.utf8)) == hex)
    }

    @Test func namesAreTheContentsHashAndStoringTwiceIsHarmless() async throws {
        let dir = try makeTempDirectory()
        let store = try FileStore(directory: "\(dir)/media", publicBaseURL: "https://cdn.example.com/m/")
        let bytes = Array("picture".utf8)
        let first = try await store.put(bytes, fileExtension: "jpg")
        #expect(try first.name == "\(SHA256Hasher.hex(bytes)).jpg")
        #expect(first.url == "https://cdn.example.com/m/\(first.name)")
        #expect(try await store.put(bytes, fileExtension: "jpg") == first)
        #expect(try readFile("\(dir)/media/\(first.name)") == bytes)
        #expect(try directoryEntries("\(dir)/media") == [first.name])  // no temp file left
    }

    /// A body already in a file on the store's filesystem becomes the stored file by a second
    /// name (same inode: no byte copied), under the hash computed while it was downloaded.
    @Test func aFileIsLinkedInNotCopied() async throws {
        let dir = try makeTempDirectory()
        let bytes = [UInt8](repeating: 7, count: 100_000)
        try writeFileAtomically("\(dir)/body", bytes)
        let store = try FileStore(directory: "\(dir)/media")
        let stored = try await store.put(bytes, fileExtension: "gif", sha256: try SHA256Hasher.hex(bytes), file: "\(dir)/body", deadline: .now + .seconds(5))
        var a = stat(), b = stat()
        #expect(stat("\(dir)/body", &a) == 0 && stat("\(dir)/media/\(stored.name)", &b) == 0)
        #expect(a.st_ino == b.st_ino)
        #expect(b.st_mode & 0o777 == 0o644)
        // Without a usable file (gone, say), the bytes are written instead.
        let other = [UInt8](repeating: 8, count: 10)
        let written = try await store.put(other, fileExtension: "gif", sha256: try SHA256Hasher.hex(other), file: "\(dir)/missing", deadline: .now + .seconds(5))
        #expect(try readFile("\(dir)/media/\(written.name)") == other)
    }

    @Test func hashingInPiecesEqualsHashingWhole() throws {
        let bytes = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        var hasher = try SHA256Hasher()
        for chunk in stride(from: 0, to: bytes.count, by: 777) { hasher.update(Array(bytes[chunk..<min(bytes.count, chunk + 777)])) }
        #expect(try hasher.hex == SHA256Hasher.hex(bytes))
        #expect(try hasher.finalize() == SHA256Hasher.hash(bytes))  // finalize twice: the same digest
    }

    @Test func withoutABaseURLItIsAFileURL() async throws {
        let dir = try makeTempDirectory()
        let store = try FileStore(directory: dir)
        #expect(try await store.put([1, 2, 3], fileExtension: "png").url.hasPrefix("file:///"))
    }

    @Test func anUnwritableDirectoryIsAStoreError() async throws {
        let dir = try makeTempDirectory()
        try writeFileAtomically("\(dir)/file", [0])
        #expect(throws: StoreError.self) { try FileStore(directory: "\(dir)/file/media") }
    }

    /// A write that cannot finish by its deadline (here its one thread is busy) is given up at the
    /// deadline as a store error, never answered late, and no URL is handed out for it.
    @Test func aWriteThatCannotFinishByItsDeadlineIsGivenUpThen() async throws {
        let pool = BlockingPool(threads: 1, name: "test-store")
        let store = try FileStore(directory: try makeTempDirectory(), pool: pool)
        let busy = Task { try await pool.run { _ in usleep(2_000_000) } }
        try await Task.sleep(for: .milliseconds(50))
        let start = ContinuousClock.now
        let error = await #expect(throws: StoreError.self) {
            _ = try await store.put([1, 2, 3], fileExtension: "png", deadline: start + .milliseconds(200))
        }
        #expect(error?.code == .deadlinePassed)
        #expect(ContinuousClock.now - start < .milliseconds(1200))
        #expect(await store.record(named: "r.json", deadline: .now + .milliseconds(100)) == nil)
        _ = try await busy.value
        // With the thread free, the same store keeps its deadlines and writes.
        #expect(try await store.put([1, 2, 3], fileExtension: "png", deadline: .now + .seconds(5)).name.hasSuffix(".png"))
    }
}
