import AttacheHTTPKit
import Attache
import AttacheEnrichment
import AttacheFetch
import AttacheHTTPService
import AttacheOrigin
import AttacheRelay
import AttacheTesting
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import Testing

/// `Attache-Deadline-Ms` means one budget whichever front door it is sent to: the same header values
/// through the service (HTTP), the worker (a real JetStream) and the relay (HTTP/2), each answer
/// saying the budget given.
extension QueueWorkerTests {
    /// (header, budget in ms) under a policy of 2 s by default and 5 s at most.
    static let deadlineCases: [(header: String?, ms: Int)] = [
        (nil, 2000), ("0", 1), ("1", 1), ("250", 250), (" 250 ", 250), ("4000", 4000), ("99999999", 5000),
        ("abc", 2000), ("-5", 2000), ("1.5", 2000), ("2s", 2000),
    ]

    @Test func theSameDeadlineHeaderGivesTheSameBudgetThroughEveryFrontDoor() async throws {
        let policy = DeadlinePolicy(default: .seconds(2), maximum: .seconds(5))
        for (header, ms) in Self.deadlineCases {
            #expect(Int(policy.budget(header: header).milliseconds) == ms, "policy, header \(header ?? "none")")
        }
        // Passthrough payloads: the budget is decided before anything is fetched, and none waits.
        let payload = Array(#"{"aps":{"alert":"no media"}}"#.utf8)

        var options = Enrichment.Configuration()
        options.storage.directory = try makeTempDirectory()
        options.runtime.deadlinePolicy = policy
        let enrichment = try Enrichment(configuration: options, logger: Self.quiet)
        defer { enrichment.shutdown() }
        let router = buildRouter(configuration: ServerConfiguration(port: 0),
                                 enrichment: enrichment)
        let service = try await Application(router: router).test(.router) { client in
            var budgets: [Int] = []
            for (header, _) in Self.deadlineCases {
                var headers = HTTPFields()
                if let header { headers[HTTPField.Name(DeadlinePolicy.header)!] = header }
                let budget = try await client.execute(uri: "/v1/enrich", method: .post, headers: headers, body: ByteBuffer(bytes: payload)) { r in
                    #expect(r.status == .ok)
                    return r.headers[HTTPField.Name(DeadlinePolicy.header)!].flatMap { Int($0) } ?? -1
                }
                budgets.append(budget)
            }
            return budgets
        }

        let origin = try Origin(root: Fixtures.mediaDirectory)
        defer { origin.stop() }
        var worker: [Int] = []
        try await NATSServer.with { server in
            try await withWorker(server, origin: origin, policy: policy) { client in
                for (i, (header, _)) in Self.deadlineCases.enumerated() {
                    try await publish(client, payload, id: "d\(i)", deadlineHeader: header)
                }
                let out = try await outputs(client, count: Self.deadlineCases.count)
                #expect(out.count == Self.deadlineCases.count)
                worker = Self.deadlineCases.indices.map { i in out.first { $0.id == "d\(i)" }?.deadline.flatMap { Int($0) } ?? -1 }
            }
        }
        // The relay: its upstream is a closed port, and every answer (a 503 here) says the budget.
        let relayConfiguration = RelayConfiguration(port: 0, apnsUpstream: "http://127.0.0.1:\(try freePorts(1)[0])")
        let forwarder = try Forwarder(configuration: relayConfiguration)
        defer { forwarder.shutdown() }
        let relay = try buildRelayApplication(configuration: relayConfiguration, enrichment: enrichment, forwarder: forwarder, logger: Self.quiet)
        let relayed = try await relay.test(.live) { client in
            let port = try #require(client.port)
            var budgets: [Int] = []
            for (header, _) in Self.deadlineCases {
                let answer = try await CurlClient(timeout: .seconds(10)).post(
                    "http://127.0.0.1:\(port)/3/device/abc", body: payload,
                    fields: header.map { ["\(DeadlinePolicy.header): \($0)"] } ?? [])
                budgets.append(answer.fields[DeadlinePolicy.header.lowercased()].flatMap { Int($0) } ?? -1)
            }
            return budgets
        }

        let expected = Self.deadlineCases.map(\.ms)
        #expect(service == expected)
        #expect(worker == expected)
        #expect(relayed == expected)
    }
}
