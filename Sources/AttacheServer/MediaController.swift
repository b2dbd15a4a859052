import AttacheStore
import AttacheSupport
import HTTPTypes
import Hummingbird
import NIOCore
import NIOPosix

/// `GET|HEAD /media/<name>`: stored media, content-addressed, so every answer may be cached for a
/// year and its name is its strong ETag. Names are checked (`<64 hex>.<ext>`): no traversal.
extension HTTPField.Name {
    static let contentTypeOptions = Self("X-Content-Type-Options")!
}

struct MediaController: Sendable {
    let directory: String

    func register(on router: some RouterMethods<AttacheRequestContext>) {
        router.get("/media/{name}") { request, context in try await serve(request, context: context, head: false) }
        router.head("/media/{name}") { request, context in try await serve(request, context: context, head: true) }
    }

    static let types = StoredMedia.contentTypes

    static func validName(_ name: String) -> (hash: Substring, ext: Substring)? {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count == 64, parts[0].allSatisfy({ $0.isHexDigit && !$0.isUppercase }),
              types[String(parts[1])] != nil else { return nil }
        return (parts[0], parts[1])
    }

    func serve(_ request: Request, context: AttacheRequestContext, head: Bool) async throws -> Response {
        guard let name = context.parameters.get("name"), let (hash, ext) = Self.validName(name) else {
            throw HTTPError(.notFound)
        }
        let path = "\(directory)/\(name)"
        let bytes: [UInt8]
        do {
            bytes = try await NIOThreadPool.singleton.runIfActive { try readRegularFile(path) }
        } catch {
            throw HTTPError(.notFound)
        }
        var headers = HTTPFields()
        headers[.contentType] = Self.types[String(ext)]
        headers[.eTag] = "\"\(hash)\""
        headers[.cacheControl] = StoredMedia.cacheControl
        headers[.acceptRanges] = "bytes"
        // The type is the one the name says; browsers must not guess another from the bytes.
        headers[.contentTypeOptions] = "nosniff"
        if let match = request.headers[.ifNoneMatch], match == "\"\(hash)\"" || match == "*" {
            return Response(status: .notModified, headers: headers)
        }
        var status = HTTPResponse.Status.ok
        var slice = bytes[...]
        if let range = request.headers[.range] {
            guard let r = Self.byteRange(range, size: bytes.count) else {
                headers[.contentRange] = "bytes */\(bytes.count)"
                return Response(status: .rangeNotSatisfiable, headers: headers)
            }
            status = .partialContent
            slice = bytes[r]
            headers[.contentRange] = "bytes \(r.lowerBound)-\(r.upperBound - 1)/\(bytes.count)"
        }
        headers[.contentLength] = String(slice.count)
        let body: ResponseBody = head ? .init() : .init(byteBuffer: ByteBuffer(bytes: slice))
        return Response(status: status, headers: headers, body: body)
    }

    /// One range of `bytes=a-b`, `bytes=a-` or `bytes=-n`; nil when unsatisfiable or malformed.
    static func byteRange(_ header: String, size: Int) -> Range<Int>? {
        guard header.hasPrefix("bytes="), size > 0 else { return nil }
        let spec = header.dropFirst(6)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return nil }
        let first = spec[..<dash], last = spec[spec.index(after: dash)...]
        if first.isEmpty {
            guard let n = Int(last), n > 0 else { return nil }
            return max(0, size - n)..<size
        }
        guard let start = Int(first), start < size else { return nil }
        if last.isEmpty { return start..<size }
        guard let end = Int(last), end >= start else { return nil }
        return start..<min(end + 1, size)
    }
}
