import Attache
import AttacheEnrichment
import AttacheSupport
@testable import AttacheTenants
import AttacheTesting
import Logging
import ServiceLifecycle
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The file as Kubernetes mounts a Secret: `tenants.yaml` → `..data/tenants.yaml`, and `..data` a
/// symbolic link the kubelet swaps to a new directory. The service reads each new version; a bad
/// one is counted and left out.
@Suite struct TenantsFileServiceTests {
    static let quiet = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

    func write(_ directory: String, version: String, tokens: [String]) throws {
        let lines = tokens.enumerated().map { "  t\($0.offset):\n    tokens: [\"\(TenantToken.hashLine($0.element))\"]" }
        try writeFileAtomically("\(directory)/\(version)/tenants.yaml", Array(("tenants:\n" + lines.joined(separator: "\n") + "\n").utf8))
    }

    /// `..data` pointed at `version`, in one rename, as the kubelet does.
    func swap(_ directory: String, to version: String) {
        unlink("\(directory)/..data_tmp")
        symlink(version, "\(directory)/..data_tmp")
        rename("\(directory)/..data_tmp", "\(directory)/..data")
    }

    @Test func aSecretsNewVersionIsReadAndABadOneLeftOut() async throws {
        let directory = try makeTempDirectory()
        for v in ["v1", "v2", "v3"] { mkdir("\(directory)/\(v)", 0o755) }
        try write(directory, version: "v1", tokens: ["one"])
        try write(directory, version: "v2", tokens: ["one", "two"])
        try writeFileAtomically("\(directory)/v3/tenants.yaml", Array("tenants:\n  t0: [\n".utf8))
        swap(directory, to: "v1")
        symlink("..data/tenants.yaml", "\(directory)/tenants.yaml")

        let service = try await TenantsFileService(path: "\(directory)/tenants.yaml", makeScope: { EnrichmentScope(name: $0.name) },
                                                   pollInterval: .milliseconds(50), logger: Self.quiet)
        let tenants = service.tenants
        #expect(tenants.tenant(token: Array("two".utf8)) == nil)
        let group = ServiceGroup(configuration: .init(services: [service], logger: Self.quiet))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            swap(directory, to: "v2")
            try await until { tenants.tenant(token: Array("two".utf8)) != nil }
            #expect(tenants.all.count == 2)
            swap(directory, to: "v3")
            try await Task.sleep(for: .milliseconds(300))
            // Refused: the version before stays in force.
            #expect(tenants.tenant(token: Array("two".utf8))?.name == "t1")
            #expect(tenants.all.count == 2)
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }

    @Test func aBadFileStopsTheStartWithItsLine() async throws {
        let directory = try makeTempDirectory()
        try writeFileAtomically("\(directory)/tenants.yaml", Array("tenants:\n  acme:\n    tokenz: []\n".utf8))
        await #expect(throws: TenantsFileError(line: 3, key: "tenants.acme.tokenz",
                                                message: "unknown key (known: \(TenantsFile.tenantKeys.joined(separator: ", ")))")) {
            _ = try await TenantsFileService(path: "\(directory)/tenants.yaml", makeScope: { EnrichmentScope(name: $0.name) },
                                             logger: Self.quiet)
        }
    }

    /// Polls `condition` for up to 10 s.
    func until(_ condition: () -> Bool) async throws {
        let end = ContinuousClock.now + .seconds(10)
        while !condition() {
            guard ContinuousClock.now < end else { Issue.record("not within 10 s"); return }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}
