import AttacheHTTPKit
import HTTPTypes
import Hummingbird

/// Keeps other web pages out of a lab on loopback. A page on another site can make the browser
/// send requests to `127.0.0.1:PORT` (a form, a `text/plain` fetch: no preflight) and, by DNS
/// rebinding, even read the answers under its own name; the lab may have been started with
/// `--allow-address` for a private network, so its runs and `/media` can reveal internal images.
///
/// - On loopback, every request must name the lab itself in `Host` (`127.0.0.1:PORT`,
///   `localhost:PORT` or `[::1]:PORT`, or one of those names alone): a rebound name is 421.
/// - Every `/api/` request from a browser must come from the lab's own page: an `Origin` other
///   than `http://<Host>` or a `Sec-Fetch-Site` other than `same-origin` (or `none`, typed in the
///   address bar) is 403. Clients that are not browsers send neither and cannot be made to.
/// - A `POST` must say `Content-Type: application/json`, which no form can send without a
///   preflight the lab does not answer: anything else is 415.
struct LabGuard<Context: RequestContext>: RouterMiddleware {
    /// Whether the lab listens on loopback (then Host is checked).
    let loopback: Bool
    /// The port it listens on (`attache lab` picks a free one before it starts).
    let port: Int

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let host = request.head.authority ?? ""
        if loopback {
            // A name without a port is what a client says of port 80; a browser on another port
            // always names it, and a rebound name is never one of these.
            let named = host.lowercased()
            guard ["127.0.0.1", "localhost", "[::1]"].contains(where: { named == $0 || named == "\($0):\(port)" }) else {
                return ErrorResponse.response(.misdirectedRequest, "this is the Attache lab on 127.0.0.1:\(port); Host \(host) is not it")
            }
        }
        // The router reads `//api/run` as `/api/run`: what is the API is told the same way.
        guard request.uri.path.split(separator: "/").first == "api" else { return try await next(request, context) }
        if let origin = request.headers[.origin], origin.lowercased() != "http://\(host.lowercased())" {
            return ErrorResponse.response(.forbidden, "the lab's API answers its own page only, not \(origin)")
        }
        if let site = request.headers[.secFetchSite], site != "same-origin", site != "none" {
            return ErrorResponse.response(.forbidden, "the lab's API answers its own page only (Sec-Fetch-Site: \(site))")
        }
        if request.method == .post {
            let type = request.headers[.contentType]?.split(separator: ";").first.map { $0.filter { $0 != " " && $0 != "\t" }.lowercased() }
            guard type == "application/json" else {
                return ErrorResponse.response(.unsupportedMediaType, "the lab's API takes Content-Type: application/json")
            }
        }
        return try await next(request, context)
    }
}

extension HTTPField.Name {
    static let secFetchSite = Self("Sec-Fetch-Site")!
}
