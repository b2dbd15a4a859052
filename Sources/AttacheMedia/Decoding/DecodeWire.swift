// How jobs and results cross between Attache and its decoder helpers: frames of a small JSON
// header (what the job is, the facts of the result) and the byte blobs it refers to by index
// (the media going in, the encoded renditions coming out), so bytes are never escaped or copied
// into the header. Both ends are built from this package: the format is not an API.
import AttachePayload
import AttacheSupport
internal import CSpawn
#if canImport(Glibc)
import Glibc
#endif

package struct WireFrame: Sendable {
    package var header: JSONObject
    package var blobs: [[UInt8]]
    /// Sending: a file whose descriptor (opened read-only here) goes with the frame instead of its
    /// bytes. Received: that file, mapped.
    package var file: InputFile?

    package init(_ header: JSONObject, blobs: [[UInt8]] = [], file: InputFile? = nil) {
        self.header = header
        self.blobs = blobs
        self.file = file
    }
}

package struct WireError: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}

/// One end of a helper's channel (a socketpair). The service's end sends with MSG_NOSIGNAL, so
/// a helper that died mid-job is an error to handle, never a SIGPIPE that ends the service.
package struct FrameChannel: Sendable {
    package let fd: Int32
    /// Send with `send(MSG_NOSIGNAL)` (the service); the helper writes with `write`, which its
    /// sandbox allows.
    package let useSend: Bool
    /// The largest frame accepted (header and blobs together).
    package let maxBytes: Int

    package init(fd: Int32, useSend: Bool, maxBytes: Int) {
        self.fd = fd
        self.useSend = useSend
        self.maxBytes = maxBytes
    }

    /// A frame with a file says so in its header (`"file": true`); the descriptor follows the
    /// header as one byte of its own, so that the reader, which reads exactly the header first,
    /// takes it with `recvmsg` and never drops it with a plain read.
    package func write(_ frame: WireFrame) throws {
        var headerObject = frame.header
        if frame.file != nil { headerObject["file"] = .bool(true) }
        let header = JSONWriter.bytes(.object(headerObject))
        var prefix = [UInt8]()
        prefix.reserveCapacity(8 + header.count + 8)
        append(UInt32(header.count), to: &prefix)
        prefix += header
        append(UInt32(frame.blobs.count), to: &prefix)
        try send(prefix)
        if let file = frame.file {
            guard let path = file.path else { throw WireError("a file to hand over without a name") }
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw WireError("open \(path): \(String(cString: strerror(errno)))") }
            defer { close(fd) }
            let rc = attache_send_descriptor(self.fd, fd)
            guard rc == 0 else { throw WireError("sendmsg: \(String(cString: strerror(rc)))") }
        }
        for blob in frame.blobs {
            var length = [UInt8]()
            append(UInt64(blob.count), to: &length)
            try send(length)
            try send(blob)
        }
    }

    /// The next frame; nil at end of stream before its first byte (the other end closed).
    package func read() throws -> WireFrame? {
        var total = 0
        func take(_ count: Int) throws -> [UInt8] {
            total += count
            guard count >= 0, total <= maxBytes else { throw WireError("a frame over \(maxBytes) bytes") }
            return try receive(count)
        }
        guard let first = try receive(4, endOK: true) else { return nil }
        let headerBytes = try take(Int(number(first)))
        guard case .object(let header)? = try? JSONParser(maxBytes: maxBytes).parse(headerBytes) else {
            throw WireError("a frame header that is not a JSON object")
        }
        let count = Int(number(try take(4)))
        guard count <= 16 else { throw WireError("\(count) blobs in one frame") }
        var file: InputFile?
        if header["file"] == .bool(true) {
            var descriptor: Int32 = -1
            let rc = attache_receive_descriptor(fd, &descriptor)
            guard rc == 0 else { throw WireError("recvmsg: \(String(cString: strerror(rc)))") }
            defer { close(descriptor) }
            file = try InputFile(descriptor: descriptor, name: "a job's file")
            guard file!.count <= maxBytes else { throw WireError("a file over \(maxBytes) bytes") }
        }
        var blobs: [[UInt8]] = []
        for _ in 0..<count {
            let length = number(try take(8))
            guard length <= UInt64(maxBytes) else { throw WireError("a blob of \(length) bytes") }
            blobs.append(try take(Int(length)))
        }
        return WireFrame(header, blobs: blobs, file: file)
    }

    private func append<T: FixedWidthInteger>(_ value: T, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes += $0 }
    }

    private func number(_ bytes: [UInt8]) -> UInt64 {
        bytes.reversed().reduce(0) { $0 << 8 | UInt64($1) }
    }

    private func send(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let rest = buffer.count - offset
                let n = useSend ? Glibc.send(fd, buffer.baseAddress! + offset, rest, Int32(MSG_NOSIGNAL))
                                : Glibc.write(fd, buffer.baseAddress! + offset, rest)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw WireError("write: \(String(cString: strerror(errno)))")
                }
                offset += n
            }
        }
    }

    /// Exactly `count` bytes; nil when `endOK` and the stream ends before the first.
    private func receive(_ count: Int, endOK: Bool) throws -> [UInt8]? {
        var ended = false
        let bytes = try [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            while initialized < count {
                let n = Glibc.read(fd, buffer.baseAddress! + initialized, count - initialized)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw WireError("read: \(String(cString: strerror(errno)))")
                }
                if n == 0 {
                    guard initialized == 0 && endOK else { throw WireError("the stream ended inside a frame") }
                    ended = true
                    return
                }
                initialized += n
            }
        }
        return ended ? nil : bytes
    }

    private func receive(_ count: Int) throws -> [UInt8] {
        try receive(count, endOK: false) ?? []
    }
}

/// Jobs and results as frames.
package enum DecodeWire {
    // MARK: jobs

    package static func frame(_ job: DecodeJob) -> WireFrame {
        var o = JSONObject()
        switch job {
        case let .image(_, format, options, limits):
            o["op"] = .string("image")
            o["format"] = format.map { .string($0.rawValue) } ?? .null
            o["options"] = json(options)
            o["limits"] = json(limits)
        case let .movie(_, format, options, time, posterMode, limits):
            o["op"] = .string("movie")
            o["format"] = format.map { .string($0.rawValue) } ?? .null
            o["options"] = json(options)
            o["time"] = time.map(JSONValue.exact) ?? .null
            o["poster"] = .string(posterMode.rawValue)
            o["limits"] = json(limits)
        case let .probe(_, limits):
            o["op"] = .string("probe")
            o["limits"] = json(limits)
        }
        // A mapped file goes by descriptor; bytes in memory (and a file that came without a name,
        // which only a helper holds) as a blob.
        if case .file(let file) = job.bytes, file.path != nil { return WireFrame(o, file: file) }
        return WireFrame(o, blobs: [job.bytes.array])
    }

    package static func job(_ frame: WireFrame) throws -> DecodeJob {
        let o = Fields(frame.header)
        guard let bytes = frame.file.map(MappedBytes.file) ?? frame.blobs.first.map(MappedBytes.memory) else {
            throw WireError("a job without bytes")
        }
        let limits = try self.limits(o.object("limits"))
        let format = try o.optionalString("format").map { name in
            guard let format = MediaFormat(rawValue: name) else { throw WireError("unknown format \(name)") }
            return format
        }
        switch try o.string("op") {
        case "image":
            return .image(bytes: bytes, format: format, options: try options(o.object("options")), limits: limits)
        case "movie":
            guard let poster = PosterMode(rawValue: try o.string("poster")) else { throw WireError("unknown poster mode") }
            return .movie(bytes: bytes, format: format, options: try options(o.object("options")), time: try o.optionalDouble("time"),
                          posterMode: poster, limits: limits)
        case "probe":
            return .probe(bytes: bytes, limits: limits)
        case let op:
            throw WireError("unknown job \(op)")
        }
    }

    // MARK: results

    /// A result, or the media error the job ended with; `cpuMs` is what the helper has used in all.
    package static func frame(_ result: Result<DecodeResult, MediaError>, cpuMs: Int) -> WireFrame {
        var o = JSONObject()
        var blobs: [[UInt8]] = []
        func image(_ image: RenderedImage) -> JSONValue {
            blobs.append(image.bytes)
            return .object(JSONObject(["format": .string(image.format.rawValue), "width": .int(image.width),
                                       "height": .int(image.height), "frames": .int(image.frames), "blob": .int(blobs.count - 1)]))
        }
        o["cpu_ms"] = .int(cpuMs)
        switch result {
        case .failure(let error):
            o["ok"] = .bool(false)
            o["code"] = .string(error.code.description)
            o["message"] = .string(error.message)
        case let .success(.image(rendition, inspectMs, renderMs)):
            o["ok"] = .bool(true)
            o["kind"] = .string("image")
            o["header"] = json(rendition.header)
            o["thumbnail"] = image(rendition.thumbnail)
            if let display = rendition.display { o["display"] = image(display) }
            if let hash = rendition.thumbhash { o["thumbhash"] = .string(hash) }
            if let android = rendition.android { o["android"] = image(android) }
            if let gif = rendition.gif { o["gif"] = image(gif) }
            o["inspect_ms"] = .exact(inspectMs)
            o["render_ms"] = .exact(renderMs)
        case let .success(.movie(movie)):
            o["ok"] = .bool(true)
            o["kind"] = .string("movie")
            o["facts"] = json(movie.facts)
            if let thumbnail = movie.thumbnail { o["thumbnail"] = image(thumbnail) }
            if let time = movie.thumbnailTime { o["thumbnail_time"] = .exact(time) }
            if let converted = movie.converted {
                blobs.append(converted.bytes)
                o["converted"] = json(converted, blob: blobs.count - 1)
            }
        case let .success(.probe(facts)):
            o["ok"] = .bool(true)
            o["kind"] = .string("probe")
            o["facts"] = json(facts)
        }
        return WireFrame(o, blobs: blobs)
    }

    /// The result a frame carries; a media error is thrown as the `MediaError` it was.
    package static func result(_ frame: WireFrame) throws -> DecodeResult {
        let o = Fields(frame.header)
        guard try o.bool("ok") else {
            let name = try o.string("code")
            guard let base = MediaError.Code.Base(rawValue: name) else { throw WireError("unknown media error \(name)") }
            throw MediaError(MediaError.Code(base), try o.string("message"))
        }
        func image(_ key: String) throws -> RenderedImage? {
            guard o.has(key) else { return nil }
            let i = Fields(try o.object(key))
            let index = try i.int("blob")
            guard let format = MediaFormat(rawValue: try i.string("format")), frame.blobs.indices.contains(index) else {
                throw WireError("a rendered image without its format or bytes")
            }
            return RenderedImage(bytes: frame.blobs[index], format: format, width: try i.int("width"), height: try i.int("height"),
                                 frames: try i.int("frames"))
        }
        switch try o.string("kind") {
        case "image":
            guard let thumbnail = try image("thumbnail") else { throw WireError("an image result without a thumbnail") }
            let rendition = ImageRendition(header: try header(o.object("header")), thumbnail: thumbnail, display: try image("display"),
                                           thumbhash: o.has("thumbhash") ? try o.string("thumbhash") : nil, android: try image("android"),
                                           gif: try image("gif"))
            return .image(rendition, inspectMs: try o.double("inspect_ms"), renderMs: try o.double("render_ms"))
        case "movie":
            var converted: ConvertedMovie?
            if o.has("converted") { converted = try self.converted(o.object("converted"), blobs: frame.blobs) }
            return .movie(MovieRendition(facts: try facts(o.object("facts")), thumbnail: try image("thumbnail"),
                                         thumbnailTime: try o.optionalDouble("thumbnail_time"), converted: converted))
        case "probe":
            return .probe(try facts(o.object("facts")))
        case let kind:
            throw WireError("unknown result \(kind)")
        }
    }

    // MARK: the values inside

    static func json(_ r: RenderOptions) -> JSONValue {
        var o = JSONObject(["thumbnail_size": .int(r.thumbnailSize), "display_size": .int(r.displaySize),
                            "jpeg_quality": .int(r.jpegQuality), "display_copy": .bool(r.makesDisplayCopy)])
        if let c = r.clip { o["clip"] = .array([.exact(c.x), .exact(c.y), .exact(c.width), .exact(c.height)]) }
        if let size = r.androidSize { o["android_size"] = .int(size) }
        if !r.convertsNow { o["converts_later"] = .bool(true) }
        if !r.keepsGIFCopy { o["no_gif_copy"] = .bool(true) }
        if let t = r.transcode {
            o["transcode"] = .object(JSONObject([
                "movie_bytes": .int(t.movieBytes), "sound_bytes": .int(t.soundBytes), "keep_seconds": .exact(t.keepSeconds),
                "max_edge": .int(t.maxEdge), "source_bytes": .int(t.sourceBytes), "preset": .string(t.preset),
            ]))
        }
        return .object(o)
    }

    static func options(_ object: JSONObject) throws -> RenderOptions {
        let o = Fields(object)
        var clip: MediaOptions.ClipRect?
        if o.has("clip") {
            let c = try o.array("clip").compactMap(\.doubleValue)
            guard c.count == 4 else { throw WireError("a clip that is not four numbers") }
            clip = .init(x: c[0], y: c[1], width: c[2], height: c[3])
        }
        var transcode: TranscodeSettings?
        if o.has("transcode") {
            let t = Fields(try o.object("transcode"))
            transcode = TranscodeSettings(movieBytes: try t.int("movie_bytes"), soundBytes: try t.int("sound_bytes"),
                                          keepSeconds: try t.double("keep_seconds"), maxEdge: try t.int("max_edge"),
                                          sourceBytes: try t.int("source_bytes"), preset: try t.string("preset"))
        }
        var options = RenderOptions(thumbnailSize: try o.int("thumbnail_size"), displaySize: try o.int("display_size"), clip: clip,
                                    jpegQuality: try o.int("jpeg_quality"), makesDisplayCopy: try o.bool("display_copy"),
                                    androidSize: o.has("android_size") ? try o.int("android_size") : nil, transcode: transcode)
        options.convertsNow = try !(o.has("converts_later") && o.bool("converts_later"))
        options.keepsGIFCopy = try !(o.has("no_gif_copy") && o.bool("no_gif_copy"))
        return options
    }

    static func json(_ c: ConvertedMovie, blob: Int) -> JSONValue {
        var o = JSONObject([
            "format": .string(c.format.rawValue), "method": .string(c.method.rawValue), "duration": .exact(c.duration), "blob": .int(blob),
            "ms": .exact(c.milliseconds),
        ])
        if let w = c.width, let h = c.height {
            o["width"] = .int(w)
            o["height"] = .int(h)
        }
        if let k = c.keptSeconds { o["kept_seconds"] = .exact(k) }
        if let v = c.videoEncoder { o["video"] = .string(v) }
        if let a = c.audioEncoder { o["audio"] = .string(a) }
        return .object(o)
    }

    static func converted(_ object: JSONObject, blobs: [[UInt8]]) throws -> ConvertedMovie {
        let o = Fields(object)
        let index = try o.int("blob")
        guard let format = MediaFormat(rawValue: try o.string("format")), let method = ConvertedMovie.Method(rawValue: try o.string("method")),
              blobs.indices.contains(index) else {
            throw WireError("a converted movie without its format, method or bytes")
        }
        return ConvertedMovie(bytes: blobs[index], format: format, method: method, duration: try o.double("duration"),
                              width: o.has("width") ? try o.int("width") : nil, height: o.has("height") ? try o.int("height") : nil,
                              keptSeconds: try o.optionalDouble("kept_seconds"), videoEncoder: try o.optionalString("video"),
                              audioEncoder: try o.optionalString("audio"), milliseconds: try o.double("ms"))
    }

    static func json(_ l: MediaLimits) -> JSONValue {
        .object(JSONObject([
            "max_pixels": .int(l.maxPixels), "max_gif_frames": .int(l.maxGIFFrames), "max_scans": .int(l.maxProgressiveScans),
            "max_decoder_memory": .int(l.maxDecoderMemory), "image_bytes": .int(l.imageBytes), "audio_bytes": .int(l.audioBytes),
            "video_bytes": .int(l.videoBytes), "max_video_pixels": .int(l.maxVideoPixels), "max_duration": .exact(l.maxDuration),
            "max_streams": .int(l.maxStreams),
        ]))
    }

    static func limits(_ object: JSONObject) throws -> MediaLimits {
        let o = Fields(object)
        return MediaLimits(
            maxPixels: try o.int("max_pixels"), maxGIFFrames: try o.int("max_gif_frames"), maxProgressiveScans: try o.int("max_scans"),
            maxDecoderMemory: try o.int("max_decoder_memory"), imageBytes: try o.int("image_bytes"), audioBytes: try o.int("audio_bytes"),
            videoBytes: try o.int("video_bytes"), maxVideoPixels: try o.int("max_video_pixels"), maxDuration: try o.double("max_duration"),
            maxStreams: try o.int("max_streams")
        )
    }

    static func json(_ h: ImageHeader) -> JSONValue {
        .object(JSONObject([
            "format": .string(h.format.rawValue), "width": .int(h.width), "height": .int(h.height),
            "orientation": .int(h.orientation), "progressive": .bool(h.progressive), "frames": .int(h.frames),
            "has_alpha": .bool(h.hasAlpha), "coefficient_bytes": .int(h.coefficientBytes),
        ]))
    }

    static func header(_ object: JSONObject) throws -> ImageHeader {
        let o = Fields(object)
        guard let format = MediaFormat(rawValue: try o.string("format")) else { throw WireError("unknown image format") }
        return ImageHeader(format: format, width: try o.int("width"), height: try o.int("height"), orientation: try o.int("orientation"),
                           progressive: try o.bool("progressive"), frames: try o.int("frames"), hasAlpha: try o.bool("has_alpha"),
                           coefficientBytes: try o.int("coefficient_bytes"))
    }

    static func json(_ f: MediaFacts) -> JSONValue {
        var o = JSONObject([
            "format": .string(f.format.rawValue), "kind": .string(f.kind.rawValue), "container": .string(f.container),
            "width": .int(f.width), "height": .int(f.height), "rotation": .int(f.rotation), "duration": .exact(f.duration),
            "has_video": .bool(f.hasVideo), "has_audio": .bool(f.hasAudio), "has_cover_art": .bool(f.hasCoverArt),
        ])
        if let v = f.videoCodec { o["video_codec"] = .string(v) }
        if let a = f.audioCodec { o["audio_codec"] = .string(a) }
        if let r = f.frameRate { o["frame_rate"] = .exact(r) }
        if let b = f.bitRate { o["bit_rate"] = .int(b) }
        if let u = f.unsupportedBecause { o["unsupported_because"] = .string(u) }
        return .object(o)
    }

    static func facts(_ object: JSONObject) throws -> MediaFacts {
        let o = Fields(object)
        guard let format = MediaFormat(rawValue: try o.string("format")), let kind = MediaKind(rawValue: try o.string("kind")) else {
            throw WireError("unknown media format or kind")
        }
        return MediaFacts(
            format: format, kind: kind, container: try o.string("container"),
            videoCodec: try o.optionalString("video_codec"), audioCodec: try o.optionalString("audio_codec"),
            width: try o.int("width"), height: try o.int("height"), rotation: try o.int("rotation"),
            duration: try o.double("duration"), frameRate: try o.optionalDouble("frame_rate"),
            bitRate: try o.optionalDouble("bit_rate").map { Int($0) },
            hasVideo: try o.bool("has_video"), hasAudio: try o.bool("has_audio"), hasCoverArt: try o.bool("has_cover_art"),
            unsupportedBecause: try o.optionalString("unsupported_because")
        )
    }
}

/// Typed reads of a frame header's fields, each a `WireError` when missing or mistyped.
package struct Fields {
    let object: JSONObject
    package init(_ object: JSONObject) { self.object = object }

    package func has(_ key: String) -> Bool { object[key] != nil && object[key] != .null }

    private func value(_ key: String) throws -> JSONValue {
        guard let value = object[key], value != .null else { throw WireError("no \(key)") }
        return value
    }

    package func string(_ key: String) throws -> String {
        guard let s = try value(key).stringValue else { throw WireError("\(key) is not a string") }
        return s
    }

    package func optionalString(_ key: String) throws -> String? { has(key) ? try string(key) : nil }

    package func double(_ key: String) throws -> Double {
        guard case .number(let text) = try value(key), let d = Double(text) else { throw WireError("\(key) is not a number") }
        return d
    }

    package func optionalDouble(_ key: String) throws -> Double? { has(key) ? try double(key) : nil }

    package func int(_ key: String) throws -> Int {
        guard case .number(let text) = try value(key), let i = Int(text) else { throw WireError("\(key) is not a whole number") }
        return i
    }

    package func bool(_ key: String) throws -> Bool {
        guard case .bool(let b) = try value(key) else { throw WireError("\(key) is not true or false") }
        return b
    }

    package func object(_ key: String) throws -> JSONObject {
        guard case .object(let o) = try value(key) else { throw WireError("\(key) is not an object") }
        return o
    }

    package func array(_ key: String) throws -> [JSONValue] {
        guard case .array(let a) = try value(key) else { throw WireError("\(key) is not an array") }
        return a
    }
}

extension JSONValue {
    /// A Double spelled so that it reads back as the same Double (`double` rounds to six places).
    static func exact(_ value: Double) -> JSONValue { .number(value.isFinite ? "\(value)" : "0") }
}
