import AttacheSupport
import AttacheTestTraits
import Synchronization
import Testing
@testable import AttacheTesting
#if canImport(Glibc)
import Glibc
#endif

/// The servers process-level tests start (SeaweedFS, NATS) are given ports that were free when
/// chosen; one that exits before it answers (its port taken in between) is started again on new
/// ports instead of being waited for. Starting one waits in a plain loop, off the runner's threads.
@Suite(.onTestThreads) struct ServerProcessTests {
    @Test func aServerThatExitsBeforeItAnswersIsStartedAgainOnNewPorts() throws {
        let directory = try makeTempDirectory()
        let attempts = Mutex<[[Int]]>([])
        let server = try ServerProcess(ports: 1, directory: directory, log: "log", within: .seconds(20), name: "test server",
                                       arguments: { ports in
                                           let first = attempts.withLock { $0.append(ports); return $0.count == 1 }
                                           // The first attempt exits at once, as a server whose port was taken does.
                                           return first ? ["/bin/false"]
                                                        : ["/usr/bin/python3", "-m", "http.server", "--bind", "127.0.0.1", "\(ports[0])"]
                                       },
                                       readyPort: { $0[0] })
        defer { server.stop() }
        let tried = attempts.withLock { $0 }
        #expect(tried.count == 2)
        #expect(server.ports == tried.last)
        #expect(answersHTTP(port: server.ports[0]))
    }

    @Test func aServerThatKeepsExitingIsAnErrorThatQuotesItsLog() throws {
        let directory = try makeTempDirectory()
        let start = ContinuousClock.now
        let error = #expect(throws: SetupError.self) {
            try ServerProcess(ports: 1, directory: directory, log: "log", within: .seconds(20), name: "test server",
                              arguments: { _ in ["/bin/sh", "-c", "echo bind: address already in use; exit 1"] }, readyPort: { $0[0] })
        }
        #expect(start.duration(to: .now) < .seconds(10))  // three quick exits, not a 20 s wait
        #expect("\(error.map { "\($0)" } ?? "")".contains("address already in use"))
        #expect(listDirectory(directory).isEmpty)  // removed
    }

    /// A program a test starts holds none of the test process's descriptors: a socket the
    /// service accepted (NIO's are not close-on-exec), kept open in a SeaweedFS, was a connection
    /// whose close never reached its client.
    @Test func aProgramStartedForATestHoldsNoneOfItsDescriptors() throws {
        let directory = try makeTempDirectory()
        defer { removeTree(directory) }
        let held = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)  // not close-on-exec
        defer { close(held) }
        try #require(held > 3)
        let pid = try spawn(["/bin/ls", "/proc/self/fd"], output: "\(directory)/out")
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        let listed = String(decoding: try readFile("\(directory)/out"), as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(!listed.contains("\(held)"))
        #expect(Set(listed).isSubset(of: ["0", "1", "2", "3"]), "\(listed)")  // 3: the directory ls reads
    }
}
