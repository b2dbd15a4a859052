import Attache
import AttacheEnrichment
import AttacheFetch
import AttacheOrigin
import AttachePayload
import AttacheSupport
import AttacheTesting
import Logging
import Testing

/// An origin serving Samples/media on 127.0.0.1:0, a temp media directory, and enrichment set
/// up the way `attache enrich --allow-address 127.0.0.1/32` sets it up.
struct Harness {
    let origin: Origin
    let mediaDirectory: String

    init(files: [String: [UInt8]] = [:]) throws {
        origin = try Origin(root: Fixtures.mediaDirectory, files: files)
        mediaDirectory = try makeTempDirectory()
    }

    func enrichment(_ tweak: (inout Enrichment.Configuration) -> Void = { _ in }) throws -> Enrichment {
        var options = Enrichment.Configuration()
        options.storage.directory = mediaDirectory
        options.fetch.policy.allowed = [CIDR("127.0.0.1/32")!]
        options.runtime.deadlinePolicy.default = Fixtures.generousDeadline
        tweak(&options)
        return try Enrichment(configuration: options, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    /// A sample payload, pointed at this origin's port.
    func sample(_ name: String) -> [UInt8] {
        let text = String(decoding: Fixtures.bytes(name, in: Fixtures.payloadDirectory), as: UTF8.self)
        return Array(text.replacingAll("127.0.0.1:8765", with: "127.0.0.1:\(origin.port)").utf8)
    }

    func payload(_ json: String) -> [UInt8] {
        Array(json.replacingAll("ORIGIN", with: "http://127.0.0.1:\(origin.port)").utf8)
    }

    func stop() {
        origin.stop()
    }

    /// Temp files left by every process that used this media directory (fetched bodies, store writes).
    func temporaryFiles() -> [String] {
        let root = "\(mediaDirectory)/\(ScratchSpace.folderName)"
        return listDirectory(root).flatMap { process in listDirectory("\(root)/\(process)") }
    }

    /// A harness and its enrichment; stop both with `stop(e)`.
    static func started(_ tweak: (inout Enrichment.Configuration) -> Void = { _ in }) throws -> (Harness, Enrichment) {
        let h = try Harness()
        return (h, try h.enrichment(tweak))
    }

    /// The same, media named under a public base URL (the dialects' own fields are rewritten).
    static func startedWithPublicURLs() throws -> (Harness, Enrichment) {
        try started { $0.storage.publicBaseURL = publicBase }
    }

    static let publicBase = "https://cdn.example.com/m/"

    /// Enriches `input` on a fresh harness and checks that the original came back, byte for byte,
    /// with `reason`; the harness is stopped on return, its origin's statistics still readable.
    @discardableResult
    static func expectOriginal(_ input: (Harness) -> [UInt8], reason: Reason,
                               sourceLocation: SourceLocation = #_sourceLocation) async throws -> (Harness, Emission) {
        let (h, e) = try started()
        defer { h.stop(e) }
        let bytes = input(h)
        let emission = try await e.enrich(bytes)
        #expect(emission.bytes == bytes, sourceLocation: sourceLocation)
        #expect(emission.reason == reason, sourceLocation: sourceLocation)
        return (h, emission)
    }

    func stop(_ enrichment: Enrichment) {
        enrichment.shutdown()
        origin.stop()
    }
}


func json(_ bytes: [UInt8]) throws -> JSONObject {
    try Payload(bytes: bytes).root
}
