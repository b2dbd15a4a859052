import ArgumentParser
import AttacheCommandLine
import AttacheOrigin
import AttachePayload
#if canImport(Glibc)
import Glibc
#endif

struct OriginCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "origin",
        abstract: "Serve a folder of media on loopback with faults chosen per request (for tests, demos, timing).",
        discussion: """
        Faults are query parameters on any path: delay=MS, status=N, type=MIME, rate=BYTES_PER_S, stall=1 (or N or P% of the body, then nothing), \
        hang=1, truncate=N|P%, reset=N|P%, length=N, endless=1, redirect=N, location=URL, encoding=NAME, \
        profile=3g|lte|wifi. Example: /cat.jpg?delay=2000&rate=4096. Or per path, from a JSON file given \
        with --faults: {"/cat.jpg": "profile=3g", "/broken.jpg": "truncate=1000"} (a request's own query wins).
        """
    )

    @Option(help: "Folder to serve.")
    var root: String

    @Option(help: "Address to listen on (IPv4).")
    var host: String = "127.0.0.1"

    @Option(help: "Port (0 picks a free one).")
    var port: Int = 8765

    @Option(help: "JSON file of faults by path: {\"/cat.jpg\": \"delay=2000&rate=4096\"}.")
    var faults: String?

    func run() async throws {
        var byPath: [String: [String: String]] = [:]
        if let faults {
            guard case .object(let object)? = try? JSONParser().parse(try readInput(faults)) else {
                throw ValidationError("--faults must be a JSON object of path → query string")
            }
            for member in object.members {
                guard let query = member.value.stringValue else { throw ValidationError("--faults: \(member.key) needs a query string") }
                byPath[member.key] = OriginFault.parameters(query)
            }
        }
        let origin = try Origin(host: host, port: port, root: root, faults: byPath)
        writeStdout(Array("origin listening on http://\(host):\(origin.port)\n".utf8))
        while true { sleep(3600) }
    }
}
