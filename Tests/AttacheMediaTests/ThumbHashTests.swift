#if canImport(Glibc)
import Glibc
#endif
import AttacheSupport
import AttacheTestTraits
import AttacheTesting
import Testing
@testable import AttacheMedia

/// The placeholder is checked the way an app uses it: decoded by the reference decoder (ported
/// below from evanw/thumbhash's `thumbHashToRGBA`), it must look like the image it was made from.
@Suite(.serialized, .onTestThreads) struct ThumbHashTests {
    /// The reference decoder: the hash back to a small RGBA image (at most 32 pixels a side).
    static func decode(_ hash: [UInt8]) -> (width: Int, height: Int, rgba: [UInt8]) {
        let header24 = Int(hash[0]) | Int(hash[1]) << 8 | Int(hash[2]) << 16
        let header16 = Int(hash[3]) | Int(hash[4]) << 8
        let lDC = Double(header24 & 63) / 63
        let pDC = Double(header24 >> 6 & 63) / 31.5 - 1
        let qDC = Double(header24 >> 12 & 63) / 31.5 - 1
        let lScale = Double(header24 >> 18 & 31) / 31
        let hasAlpha = header24 >> 23 != 0
        let pScale = Double(header16 >> 3 & 63) / 63
        let qScale = Double(header16 >> 9 & 63) / 63
        let landscape = header16 >> 15 != 0
        let lx = max(3, landscape ? (hasAlpha ? 5 : 7) : header16 & 7)
        let ly = max(3, landscape ? header16 & 7 : (hasAlpha ? 5 : 7))
        let aDC = hasAlpha ? Double(hash[5] & 15) / 15 : 1
        let aScale = Double(hash[5] >> 4) / 15
        let acStart = hasAlpha ? 6 : 5
        var acIndex = 0
        func channel(_ nx: Int, _ ny: Int, _ scale: Double) -> [Double] {
            var ac: [Double] = []
            for cy in 0..<ny {
                var cx = cy > 0 ? 0 : 1
                while cx * ny < nx * (ny - cy) {
                    let nibble = Int(hash[acStart + acIndex >> 1]) >> ((acIndex & 1) << 2) & 15
                    ac.append((Double(nibble) / 7.5 - 1) * scale)
                    acIndex += 1
                    cx += 1
                }
            }
            return ac
        }
        let lAC = channel(lx, ly, lScale), pAC = channel(3, 3, pScale * 1.25), qAC = channel(3, 3, qScale * 1.25)
        let aAC = hasAlpha ? channel(5, 5, aScale) : []
        // thumbHashToApproximateAspectRatio
        let rx = landscape ? (hasAlpha ? 5 : 7) : hash[3] & 7, ry = landscape ? Int(hash[3] & 7) : (hasAlpha ? 5 : 7)
        let ratio = Double(rx) / Double(ry)
        let w = Int((ratio > 1 ? 32 : 32 * ratio).rounded()), h = Int((ratio > 1 ? 32 / ratio : 32).rounded())
        var rgba = [UInt8](repeating: 0, count: w * h * 4)
        for y in 0..<h {
            for x in 0..<w {
                var l = lDC, p = pDC, q = qDC, a = aDC
                let fx = (0..<max(lx, hasAlpha ? 5 : 3)).map { cos(Double.pi / Double(w) * (Double(x) + 0.5) * Double($0)) }
                let fy = (0..<max(ly, hasAlpha ? 5 : 3)).map { cos(Double.pi / Double(h) * (Double(y) + 0.5) * Double($0)) }
                var j = 0
                for cy in 0..<ly {
                    var cx = cy > 0 ? 0 : 1
                    while cx * ly < lx * (ly - cy) { l += lAC[j] * fx[cx] * fy[cy] * 2; j += 1; cx += 1 }
                }
                j = 0
                for cy in 0..<3 {
                    for cx in (cy > 0 ? 0 : 1)..<(3 - cy) {
                        let f = fx[cx] * fy[cy] * 2
                        p += pAC[j] * f
                        q += qAC[j] * f
                        j += 1
                    }
                }
                if hasAlpha {
                    j = 0
                    for cy in 0..<5 {
                        for cx in (cy > 0 ? 0 : 1)..<(5 - cy) { a += aAC[j] * fx[cx] * fy[cy] * 2; j += 1 }
                    }
                }
                let b = l - 2 / 3 * p, r = (3 * l - b + q) / 2, g = r - q
                let i = (y * w + x) * 4
                for (k, v) in [r, g, b, a].enumerated() { rgba[i + k] = UInt8(max(0, 255 * min(1, v))) }
            }
        }
        return (w, h, rgba)
    }

    /// The image scaled (by the pipeline's own resampler) to the decoded placeholder's size.
    func scaled(_ name: String, width: Int, height: Int) throws -> [UInt8] {
        let bytes = Fixtures.bytes(name)
        let format = try #require(Sniffer.sniff(bytes))
        let pixels = try bytes.withUnsafeBytes {
            try ImageCodecs.decode($0, format: format, plan: DecodePlan(), limits: MediaLimits(), abort: AbortFlag())
        }
        return try ImageCodecs.resize(pixels, width: width, height: height).straightRGBA()
    }

    /// The image's hash as the pipeline makes it for a thumbnail, and whether a render carries one.
    func hash(_ name: String) throws -> [UInt8] {
        let bytes = Fixtures.bytes(name)
        let format = try #require(Sniffer.sniff(bytes))
        let pipeline = ImagePipeline()
        let pixels = try bytes.withUnsafeBytes {
            try ImageCodecs.decode($0, format: format, plan: DecodePlan(), limits: MediaLimits(), abort: AbortFlag())
        }
        let text = try pipeline.placeholder(pixels)
        #expect(try pipeline.render(bytes, header: try pipeline.inspect(bytes), options: RenderOptions()).thumbhash != nil)
        return try #require(Self.base64Decode(text))
    }

    static func base64Decode(_ text: String) -> [UInt8]? {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var bits = 0, count = 0, out: [UInt8] = []
        for c in text.utf8 where c != UInt8(ascii: "=") {
            guard let v = alphabet.firstIndex(of: c) else { return nil }
            bits = bits << 6 | v
            count += 6
            if count >= 8 {
                count -= 8
                out.append(UInt8(bits >> count & 255))
            }
        }
        return out
    }

    @Test func aPhotoDecodesToAPlaceholderCloseToIt() async throws {
        let hash = try hash("photo.jpg")
        #expect((20...30).contains(hash.count))
        let placeholder = Self.decode(hash)
        // 4:3 as the reference decoder approximates it (7 by 5 luminance terms).
        #expect((placeholder.width, placeholder.height) == (32, 23))
        let image = try scaled("photo.jpg", width: 32, height: 23)
        let error = Double(zip(placeholder.rgba, image).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }) / Double(image.count)
        #expect(error < 24, "mean difference \(error)")
        // And it is not any placeholder: a flat grey is further from the photo.
        let grey = Double(image.reduce(0) { $0 + abs(Int($1) - 128) }) / Double(image.count)
        #expect(error < grey / 2)
    }

    @Test func alphaIsKept() async throws {
        let hash = try hash("alpha.png")
        #expect(hash[2] & 0x80 != 0)  // the alpha flag
        let placeholder = Self.decode(hash)
        let image = try scaled("alpha.png", width: placeholder.width, height: placeholder.height)
        let alphaError = stride(from: 3, to: image.count, by: 4).reduce(0) { $0 + abs(Int(placeholder.rgba[$1]) - Int(image[$1])) }
        #expect(Double(alphaError) / Double(image.count / 4) < 48)
    }

    @Test func base64IsStandard() {
        #expect(Base64.encode([]) == "")
        #expect(Base64.encode(Array("f".utf8)) == "Zg==")
        #expect(Base64.encode(Array("fo".utf8)) == "Zm8=")
        #expect(Base64.encode(Array("foobar".utf8)) == "Zm9vYmFy")
    }
}
