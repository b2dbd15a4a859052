import Attache
import AttacheEnrichment
import Configuration
import Logging
import Metrics
import ServiceLifecycle
import Synchronization
import SystemPackage
#if canImport(Glibc)
import Glibc
#endif

/// The tenants file, read through swift-configuration's `ReloadingFileProvider`: checked every
/// `pollInterval` and on SIGHUP. A version that parses and whose scopes can be made is put in force
/// at once; one that does not is logged and counted (`attache_tenants_reload_failures_total`) and
/// the version before stays.
public final class TenantsFileService: Service, Sendable {
    public let tenants: Tenants
    public let path: String
    private let provider: ReloadingFileProvider<TenantsSnapshot>
    private let logger: Logger
    private let failures: Counter
    /// The last refusal said (a file's error, or why it cannot be read): each is said once.
    private let reported: LastReported

    /// How often the file is looked at (a Kubernetes Secret's update lands within the kubelet's
    /// sync period, then here within this).
    public static let pollInterval = Duration.seconds(2)

    /// Reads the file now; throws `TenantsFileError` (with its line and key) when it is not valid.
    public init(path: String, makeScope: @escaping @Sendable (Tenant) throws -> EnrichmentScope,
                pollInterval: Duration = TenantsFileService.pollInterval,
                logger: Logger, metrics: any MetricsFactory = MetricsSystem.factory) async throws {
        self.path = path
        self.logger = logger
        let failures = Counter(label: "attache_tenants_reload_failures_total", factory: metrics)
        self.failures = failures
        let reported = LastReported()
        self.reported = reported
        let running = Atomic<Bool>(false)
        // The provider parses each changed version; a refused one is reported here once (the
        // provider tries the same bytes again at every poll until they change). At start, the
        // error is thrown to the caller instead.
        let options = TenantsSnapshot.ParsingOptions { error in
            guard running.load(ordering: .relaxed) else { return }
            guard reported.isNew(error.description) else { return }
            logger.error("tenants file refused; the version before stays in force",
                         metadata: ["attache.tenants.file": "\(path)", "attache.error": "\(error)"])
            failures.increment()
        } accepted: {
            reported.clear()
        }
        do {
            provider = try await ReloadingFileProvider<TenantsSnapshot>(
                parsingOptions: options, filePath: FilePath(path), allowMissing: false, pollInterval: pollInterval,
                logger: Logger(label: "attache.tenants.provider"), metrics: metrics
            )
        }
        running.store(true, ordering: .relaxed)
        guard let first = provider.snapshot() as? TenantsSnapshot else { throw TenantsFileError(line: 0, key: "", message: "not read") }
        tenants = try Tenants(first.tenants, makeScope: makeScope)
    }

    public func run() async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await self.provider.run() }
            group.addTask {
                // Ends with the provider at a graceful shutdown, not a poll later.
                _ = try? await cancelWhenGracefulShutdown { try await self.watchReadable() }
            }
            group.addTask {
                try await self.provider.watchSnapshot { updates in
                    for await snapshot in updates.cancelOnGracefulShutdown() {
                        guard let version = snapshot as? TenantsSnapshot else { continue }
                        self.put(version)
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    /// The provider keeps the version before when the file goes away or stops being a file (a
    /// FIFO, a device), and says nothing: looked at here at the provider's pace, said once and
    /// counted as a refused version is.
    private func watchReadable() async throws {
        while !Task.isCancelled {
            if let problem = Self.unreadable(path) {
                if reported.isNew(problem) {
                    logger.error("tenants file cannot be read; the version before stays in force",
                                 metadata: ["attache.tenants.file": "\(path)", "attache.error": "\(problem)"])
                    failures.increment()
                }
            } else {
                reported.clear(ifPrefixed: Self.unreadablePrefix)
            }
            try await Task.sleep(for: Self.pollInterval)
        }
    }

    private static let unreadablePrefix = "the file "

    /// Why `path` is not a tenants file one can read, or nil.
    static func unreadable(_ path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return "\(unreadablePrefix)is gone (\(String(cString: strerror(errno))))" }
        switch info.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFIFO: return "\(unreadablePrefix)is a FIFO, not a regular file"
        case S_IFCHR, S_IFBLK: return "\(unreadablePrefix)is a device, not a regular file"
        case S_IFDIR: return "\(unreadablePrefix)is a directory"
        default: return "\(unreadablePrefix)is not a regular file"
        }
        guard access(path, R_OK) == 0 else { return "\(unreadablePrefix)cannot be read (\(String(cString: strerror(errno))))" }
        return nil
    }

    private func put(_ version: TenantsSnapshot) {
        guard version.tenants != tenants.all else { return }
        do {
            try tenants.update(version.tenants)
            logger.info("tenants file reloaded", metadata: [
                "attache.tenants.file": "\(path)", "attache.tenants": "\(version.tenants.map(\.name).joined(separator: ","))",
            ])
        } catch {
            logger.error("tenants file refused; the version before stays in force",
                         metadata: ["attache.tenants.file": "\(path)", "attache.error": "\(error)"])
            failures.increment()
        }
    }
}

/// One version of the tenants file as swift-configuration's file provider holds it. The tenants
/// are read as a whole (`tenants`), not key by key: a file is valid or refused entirely.
public struct TenantsSnapshot: FileConfigSnapshot {
    public let providerName: String
    public let tenants: [Tenant]

    public struct ParsingOptions: FileParsingOptions {
        let refused: @Sendable (TenantsFileError) -> Void
        let accepted: @Sendable () -> Void

        public init(refused: @escaping @Sendable (TenantsFileError) -> Void, accepted: @escaping @Sendable () -> Void) {
            self.refused = refused
            self.accepted = accepted
        }

        public static var `default`: Self { .init(refused: { _ in }, accepted: {}) }
    }

    public init(data: RawSpan, providerName: String, parsingOptions: ParsingOptions) throws {
        let text = data.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        do throws(TenantsFileError) {
            tenants = try TenantsFile.parse(text)
        } catch {
            parsingOptions.refused(error)
            throw error
        }
        parsingOptions.accepted()
        self.providerName = providerName
    }

    public func value(forKey key: AbsoluteConfigKey, type: ConfigType) throws -> LookupResult {
        LookupResult(encodedKey: key.description, value: nil)
    }

    public var description: String { "\(providerName)[\(tenants.count) tenants]" }
    public var debugDescription: String { "\(providerName)[tenants: \(tenants.map(\.name).joined(separator: ", "))]" }
}

/// The last problem said of the tenants file, so that each is said (and counted) once while it
/// lasts, not at every poll.
private final class LastReported: Sendable {
    private let last = Mutex<String?>(nil)

    /// True the first time `problem` comes after another (or none).
    func isNew(_ problem: String) -> Bool {
        last.withLock { last in
            defer { last = problem }
            return last != problem
        }
    }

    func clear(ifPrefixed prefix: String = "") {
        last.withLock { if $0?.hasPrefix(prefix) == true { $0 = nil } }
    }
}
