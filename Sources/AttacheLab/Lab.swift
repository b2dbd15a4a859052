import Attache
import AttacheEnrichment
import AttacheFetch
import AttacheOrigin
import AttachePayload
import AttacheSupport
import AttacheTimeline
import Logging
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// What `attache lab` runs with.
public struct LabConfiguration: Sendable {
    public var host = "127.0.0.1"
    /// 0: a free port, chosen at start.
    public var port = 0
    /// Bearer tokens for the lab's API; required when `host` is not a loopback address.
    public var tokens: [String] = []
    /// A directory holding `payloads/*.json` and `media/` (the repository's `Samples`); nil: none.
    public var samples: String?
    /// Payloads enriched at once, sweeps' cells included: a pasted payload cannot take the machine.
    public var maxRunsAtOnce = 4
    /// Sweeps in progress at once; another is answered 429.
    public var maxSweepsAtOnce = 2
    /// Deadlines × faults in one sweep.
    public var maxSweepCells = 64

    public init() {}

    /// Whether `host` is a loopback address (or the name `localhost`).
    public var isLoopback: Bool {
        if host == "localhost" { return true }
        guard let address = IPAddress(host) else { return false }
        return AddressPolicy.classify(address) == "loopback"
    }
}

/// Why a lab request cannot run: a message for the page, and for invalid JSON where it is.
public struct LabError: Error, Sendable {
    public var message: String
    public var location: (line: Int, column: Int)?
    /// 400, or 429 when the lab is busy.
    public var status: Int

    public init(_ message: String, location: (line: Int, column: Int)? = nil, status: Int = 400) {
        self.message = message
        self.location = location
        self.status = status
    }
}

/// The lab's engine: the enrichment the service runs (same fetch policy, decoders, deadline
/// handling), a fault origin on loopback serving the sample media (and the developer's own media,
/// fetched once through the address policy, when a fault is asked for), and the bounds on runs.
public final class Lab: Sendable {
    public let configuration: LabConfiguration
    public let enrichment: Enrichment
    /// `http://127.0.0.1:<port>`: the sample media under faults.
    public let originURL: String
    /// Where the file store writes what runs make (served at `/media/<name>`).
    public let mediaDirectory: String
    public let samples: [(name: String, text: String)]
    private let origin: AttacheOrigin.Origin
    private let workDirectory: String
    private let originRoot: String
    private let runs: AsyncSemaphore
    private let sweeps = Mutex(0)  // sweeps in progress
    private let dialects: DialectReader

    /// The samples' payloads name this origin (`attache origin --root Samples/media` in the demo);
    /// the lab points them at its own.
    static let samplesOrigin = "http://127.0.0.1:8765"

    /// `options`: the enrichment's, as the command read them; the lab sets the media directory,
    /// the public base URL (`publicBase`, where it serves `/media`) and its origin's allowance.
    public init(configuration: LabConfiguration, options: Enrichment.Configuration, publicBase: String,
                logger: Logger = Logger(label: "attache.lab")) throws {
        self.configuration = configuration
        var template = Array("/tmp/attache-lab-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw LabError("cannot make a work directory in /tmp") }
        workDirectory = String(cString: made)
        originRoot = workDirectory + "/origin"
        mediaDirectory = workDirectory + "/media"
        do {
            try makeDirectories(originRoot + "/staged")
            let found = try Self.loadSamples(configuration.samples, into: originRoot)
            origin = try AttacheOrigin.Origin(host: "127.0.0.1", port: 0, root: originRoot)
            originURL = "http://127.0.0.1:\(origin.port)"
            samples = found.map { [originURL] in ($0.name, $0.text.replacingAll(Self.samplesOrigin, with: originURL)) }
            var options = options
            options.storage.directory = mediaDirectory
            options.storage.location = .directory
            options.storage.publicBaseURL = publicBase + "/media"
            options.cache = nil  // every run fetches: a timeline of a cache hit shows nothing
            options.fetch.policy.allowedEndpoints.append(.init(address: IPAddress("127.0.0.1")!, port: origin.port))
            dialects = options.media.dialects
            enrichment = try Enrichment(configuration: options, logger: logger)
        } catch {
            ScratchSpace.removeTree(workDirectory)
            throw error
        }
        runs = AsyncSemaphore(max(1, configuration.maxRunsAtOnce))
    }

    public func shutdown() {
        origin.stop()
        enrichment.shutdown()
        ScratchSpace.removeTree(workDirectory)
    }

    /// Every `payloads/*.json` under `directory`, sorted; its media copied where the origin serves it.
    static func loadSamples(_ directory: String?, into originRoot: String) throws -> [(name: String, text: String)] {
        guard let directory else { return [] }
        for name in ((try? directoryEntries(directory + "/media")) ?? []) {
            guard let bytes = try? readRegularFile(directory + "/media/" + name) else { continue }  // folders, links
            try writeFileAtomically(originRoot + "/" + name, bytes)
        }
        return ((try? directoryEntries(directory + "/payloads")) ?? []).filter { $0.hasSuffix(".json") }.sorted().compactMap { name in
            guard let bytes = try? readRegularFile(directory + "/payloads/" + name) else { return nil }
            return (name, String(decoding: bytes, as: UTF8.self))
        }
    }

    // MARK: - Preparing a payload

    /// The payload as it will run: parsed (invalid JSON is a `LabError` with its place), and its
    /// media URLs pointed at the fault origin with the profile's fault. Unchanged bytes when there
    /// is nothing to change, so the fallback shown is the text given, byte for byte.
    public func prepare(_ text: String, profile: FaultProfile) async throws -> [UInt8] {
        let bytes = Array(text.utf8)
        let root: JSONValue
        do {
            root = try enrichment.runtime.configuration.parser.parse(bytes)
        } catch {
            throw LabError(error.message, location: error.location)
        }
        guard root.objectValue != nil else { throw LabError("a payload is a JSON object, not this") }
        guard !profile.query.isEmpty else { return bytes }
        var urls: [String] = []
        collectMediaURLs(root, into: &urls)
        guard !urls.isEmpty else { return bytes }
        var replacements: [String: String] = [:]
        for url in urls {
            let served = url.hasPrefix(originURL + "/") ? url : try await stage(url)
            replacements[url] = served + (served.contains("?") ? "&" : "?") + profile.query
        }
        return JSONWriter.bytes(Self.replacingStrings(root, replacements))
    }

    /// The media URLs of every object in the payload (an FCM send request's APNs payload, its
    /// `image` fields), each once, in order.
    private func collectMediaURLs(_ value: JSONValue, into urls: inout [String]) {
        func add(_ url: String) {
            if (url.hasPrefix("http://") || url.hasPrefix("https://")) && !urls.contains(url) { urls.append(url) }
        }
        switch value {
        case .object(let object):
            for request in dialects.requests(in: object) { add(request.url) }
            if let image = object["image"]?.stringValue { add(image) }
            for member in object.members { collectMediaURLs(member.value, into: &urls) }
        case .array(let items):
            for item in items { collectMediaURLs(item, into: &urls) }
        case .string(let s) where s.hasPrefix(originURL + "/"):
            add(s)
        default:
            break
        }
    }

    private static func replacingStrings(_ value: JSONValue, _ replacements: [String: String]) -> JSONValue {
        switch value {
        case .object(var object):
            for i in object.members.indices { object.members[i].value = replacingStrings(object.members[i].value, replacements) }
            return .object(object)
        case .array(let items):
            return .array(items.map { replacingStrings($0, replacements) })
        case .string(let s):
            return .string(replacements[s] ?? s)
        default:
            return value
        }
    }

    /// The developer's own media, fetched once (through the address policy, as a run would) and
    /// served by the origin, so a fault can be put on it.
    private func stage(_ url: String) async throws -> String {
        let name = try SHA256Hasher.hex(Array(url.utf8)).prefix(32) + "." + Self.fileExtension(of: url)
        let path = originRoot + "/staged/" + name
        if (try? RegularFile(path)) == nil {
            let request = FetchRequest(url: url, maxBytes: enrichment.services.configuration.limits.videoBytes)
            do {
                let fetched = try await enrichment.services.engine.fetch(request, deadline: .now + .seconds(20))
                guard (200..<300).contains(fetched.status) else { throw LabError("\(url) answered \(fetched.status)") }
                try writeFileAtomically(path, try fetched.body.readAll())
            } catch let error as FetchError {
                throw LabError("\(url) could not be fetched to serve under a fault: \(error.message)")
            }
        }
        return originURL + "/staged/" + name
    }

    /// The URL's own extension when it has a short one (the origin's Content-Type follows it).
    static func fileExtension(of url: String) -> String {
        let path = url.split(separator: "?", maxSplits: 1).first.map(String.init) ?? url
        guard let last = path.split(separator: "/").last, let dot = last.lastIndex(of: ".") else { return "bin" }
        let ext = last[last.index(after: dot)...].lowercased()
        return (1...5).contains(ext.count) && ext.allSatisfy({ $0.isLetter || $0.isNumber }) ? ext : "bin"
    }

    /// The longest deadline a run may ask for: the enrichment's (`--max-deadline`), as for the
    /// service's requests.
    public var maxBudget: Duration { enrichment.deadlinePolicy.maximum }

    /// The deadline asked for, within the lab's bounds.
    public func deadline(milliseconds: Int) throws -> Duration {
        guard milliseconds >= 10, .milliseconds(milliseconds) <= maxBudget else {
            throw LabError("a deadline is between 10 ms and \(maxBudget.milliseconds.formatted) ms, not \(milliseconds) ms")
        }
        return .milliseconds(milliseconds)
    }

    // MARK: - Running

    /// One enrichment, when a run slot is free; `observer` sees each attachment's report change.
    public func run(_ bytes: [UInt8], budget: Duration, observer: ReportObserver? = nil) async throws -> Emission {
        try await runs.withPermit {
            try await enrichment.enrich(bytes, identifier: "lab", budget: budget, observer: observer)
        }
    }

    /// One of the sweep slots, given back when the slot is let go (the sweep's stream ended, or
    /// its response was never written); 429 when every slot is taken.
    public func sweepSlot() throws -> SweepSlot {
        let admitted = sweeps.withLock { n in
            guard n < configuration.maxSweepsAtOnce else { return false }
            n += 1
            return true
        }
        guard admitted else { throw LabError("\(configuration.maxSweepsAtOnce) sweeps are running; try again when one is done", status: 429) }
        return SweepSlot { [self] in self.sweeps.withLock { $0 -= 1 } }
    }

    /// The size of a file the store wrote for a URL it returned (nil: not one of the lab's).
    func storedBytes(_ url: String) -> Int? {
        guard let name = url.split(separator: "/").last, !name.contains("..") else { return nil }
        return (try? RegularFile(mediaDirectory + "/" + name))?.size
    }
}

extension Double {
    /// Whole milliseconds as text.
    var formatted: String { String(Int(self.rounded())) }
}

extension String {
    func replacingAll(_ target: String, with replacement: String) -> String {
        guard !target.isEmpty else { return self }
        var out = ""
        var rest = self[...]
        while let r = rest.firstRange(of: target) {
            out += rest[..<r.lowerBound]
            out += replacement
            rest = rest[r.upperBound...]
        }
        return out + rest
    }
}

/// A sweep slot held: released when the last reference goes.
public final class SweepSlot: Sendable {
    private let release: @Sendable () -> Void
    init(release: @escaping @Sendable () -> Void) { self.release = release }
    deinit { release() }
}
