import AttacheStore
import AttacheSupport
import AttacheTenants
import HTTPTypes
import Hummingbird
import NIOCore
import NIOPosix

/// `GET|HEAD /media/<name>`: stored media, content-addressed, so every answer may be cached for a
/// year and its name is its strong ETag. Names are checked (`<64 hex>.<ext>`): no traversal.
/// A tenant's media is under its store prefix, `/media/acme/<name>`: each segment of the prefix is
/// checked as the tenants file checks it (no `.` or `..`, no other characters).
extension HTTPField.Name {
    static let contentTypeOptions = Self("X-Content-Type-Options")!
}

public struct MediaController: Sendable {
    let directory: String

    public init(directory: String) {
        self.directory = directory
    }

    public func register(on router: some RouterMethods<AttacheRequestContext>) {
        // One route for `/media/<name>` and `/media/<prefix>/<name>` (the router refuses both a
        // parameter and a catch-all under one path).
        router.get("/media/**") { request, context in try await serve(request, context: context, head: false) }
        router.head("/media/**") { request, context in try await serve(request, context: context, head: true) }
    }

    static let types = StoredMedia.contentTypes

    static func validName(_ name: String) -> (hash: Substring, ext: Substring)? {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count == 64, parts[0].allSatisfy({ $0.isHexDigit && !$0.isUppercase }),
              types[String(parts[1])] != nil else { return nil }
        return (parts[0], parts[1])
    }

    func serve(_ request: Request, context: AttacheRequestContext, head: Bool) async throws -> Response {
        let segments = context.parameters.getCatchAll()
        // One path per object: the router reads `/media//x`, `/media/x/` and `/media/a//x` as the
        // segments of `/media/x` and `/media/a/x`; a cache in front would keep each as another copy.
        guard let name = segments.last.map(String.init), let (hash, ext) = Self.validName(name),
              segments.dropLast().allSatisfy(TenantsFile.isPrefixSegment),
              request.uri.path == "/media/" + segments.joined(separator: "/") else {
            throw HTTPError(.notFound)
        }
        let file: RegularFile
        do {
            let path = ([directory] + segments.map(String.init)).joined(separator: "/")
            file = try await NIOThreadPool.singleton.runIfActive { try RegularFile(path) }
        } catch {
            throw HTTPError(.notFound)
        }
        let size = file.size
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
        var range = 0..<size
        if let header = request.headers[.range] {
            guard let r = Self.byteRange(header, size: size) else {
                headers[.contentRange] = "bytes */\(size)"
                return Response(status: .rangeNotSatisfiable, headers: headers)
            }
            status = .partialContent
            range = r
            headers[.contentRange] = "bytes \(r.lowerBound)-\(r.upperBound - 1)/\(size)"
        }
        headers[.contentLength] = String(range.count)
        guard !head, !range.isEmpty else { return Response(status: status, headers: headers) }
        return Response(status: status, headers: headers, body: Self.stream(file, range: range))
    }

    /// The range read and sent in 128 KiB pieces as the client takes them, never the whole file
    /// in memory (a stored video may be 50 MB); reads run on NIO's thread pool. (NIO's own
    /// `FileSystem` is not used: it cannot open without blocking, and a FIFO planted in the media
    /// directory would hold a pool thread forever.) Stored files are never rewritten — the name is
    /// the hash of the bytes — so the size measured at open holds.
    static func stream(_ file: RegularFile, range: Range<Int>) -> ResponseBody {
        ResponseBody(contentLength: range.count) { writer in
            var offset = range.lowerBound
            while offset < range.upperBound {
                let length = min(128 * 1024, range.upperBound - offset), at = offset
                let chunk = try await NIOThreadPool.singleton.runIfActive {
                    var buffer = ByteBufferAllocator().buffer(capacity: length)
                    let n = try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: length) { pointer in
                        try file.read(at: at, into: UnsafeMutableRawBufferPointer(rebasing: pointer[..<length]))
                    }
                    guard n == length else { throw FileError(.shortened, path: file.path) }
                    return buffer
                }
                try await writer.write(chunk)
                offset += length
            }
            try await writer.finish(nil)
        }
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
