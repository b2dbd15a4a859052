@testable import AttacheRelay
import Testing

/// What the relay sends and what it refuses, by method and path: Apple's and Google's send paths,
/// one segment each for the token and the project, the query aside.
@Suite struct RouteTests {
    func route(_ path: String, _ method: String = "POST") -> String {
        switch RelayRoute(method: method, path: path, topic: "com.example.app") {
        case .send(let provider, let app): "send \(provider) \(app ?? "-")"
        case .methodNotAllowed(let provider): "405 \(provider)"
        case .badPath: "404"
        }
    }

    @Test func apnsSends() {
        #expect(route("/3/device/abc123") == "send apns com.example.app")
        #expect(route("/3/device/abc?x=1") == "send apns com.example.app")
        #expect(route("/3/device/é") == "send apns com.example.app")
        #expect(route("/3/device/abc", "GET") == "405 apns")
    }

    @Test func fcmSends() {
        #expect(route("/v1/projects/p1/messages:send") == "send fcm p1")
        #expect(route("/v1/projects/p%C3%A9/messages:send?alt=json") == "send fcm p%C3%A9")
        #expect(route("/v1/projects/p1/messages:send", "PUT") == "405 fcm")
    }

    @Test func otherPathsAreNotSends() {
        for path in ["/", "", "/3/device", "/3/device/", "/3/device/abc/", "//3/device/abc", "/3/devices/abc", "/3/device/?x",
                     "/v1/projects//messages:send", "/v1/projects/p1/messages:send/", "/v1/projects/a/b/messages:send",
                     "/v1/projects/p1/messages:sendx", "/v1/projects/messages:send", "/v1/projects/p1/messages", "/v2/projects/p1/messages:send"] {
            #expect(route(path) == "404", "\(path)")
            #expect(route(path, "GET") == "404", "\(path)")
        }
    }
}
