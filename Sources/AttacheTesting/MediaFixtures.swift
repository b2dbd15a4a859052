import AttacheSupport
#if canImport(Glibc)
import Glibc
#endif

/// Media for tests: the repository's Samples (found from this file's path, so tests run from a
/// checkout) and hand-made files that exercise the header limits.
public enum Fixtures {
    /// The deadline of a test that expects media attached: generous, as it must not fall back on
    /// a busy machine. Every suite starts at once and decodes in this process on
    /// `BlockingPool.shared`'s threads (one per core), so a test's first decode can queue behind
    /// every other suite's: with two busy loops beside the run, the media suites' payloads waited
    /// over 30 s. Tests of the deadline set their own.
    public static let generousDeadline: Duration = .seconds(90)

    public static let repositoryRoot: String = {
        var parts = #filePath.split(separator: "/").map(String.init)
        parts.removeLast(3)  // Sources/AttacheTesting/MediaFixtures.swift
        return "/" + parts.joined(separator: "/")
    }()

    public static let mediaDirectory = repositoryRoot + "/Samples/media"
    public static let payloadDirectory = repositoryRoot + "/Samples/payloads"

    /// A file's bytes; empty when it cannot be read (a test comparing against it then fails).
    public static func bytes(_ name: String, in directory: String = mediaDirectory) -> [UInt8] {
        (try? readFile("\(directory)/\(name)")) ?? []
    }

    /// A GIF with `frames` 1x1 frames, built by hand (counted, never decoded, by the header check).
    /// With `transparentIndex`, each frame declares that palette index transparent (its one pixel
    /// is index 0).
    public static func gif(width: Int = 1, height: Int = 1, frames: Int, transparentIndex: UInt8? = nil) -> [UInt8] {
        var b = Array("GIF89a".utf8)
        b += [UInt8(width & 0xff), UInt8(width >> 8), UInt8(height & 0xff), UInt8(height >> 8), 0x80, 0, 0]
        b += [0, 0, 0, 255, 255, 255]  // two-colour global table
        for _ in 0..<frames {
            if let t = transparentIndex { b += [0x21, 0xF9, 0x04, 0x01, 0, 0, t, 0x00] }  // graphic control
            b += [0x2C, 0, 0, 0, 0, 1, 0, 1, 0, 0x00]
            b += [0x02, 0x02, 0x44, 0x01, 0x00]  // LZW: clear, index 0, end
        }
        b.append(0x3B)
        return b
    }

    /// A PNG signature and IHDR declaring a size, with nothing after it.
    public static func pngHeader(width: UInt32, height: UInt32) -> [UInt8] {
        var b: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13] + Array("IHDR".utf8)
        for v in [width, height] { b += [UInt8(v >> 24), UInt8((v >> 16) & 0xff), UInt8((v >> 8) & 0xff), UInt8(v & 0xff)] }
        b += [8, 6, 0, 0, 0, 0, 0, 0, 0]  // depth, RGBA, methods, (CRC not checked by the header reader)
        return b
    }

    /// A JPEG with only SOI and a frame header declaring a size; `luma` is the Y component's
    /// sampling factors (0x22: 4:2:0, 0x11: 4:4:4).
    public static func jpegHeader(width: Int, height: Int, progressive: Bool, luma: UInt8 = 0x22) -> [UInt8] {
        [0xFF, 0xD8, 0xFF, progressive ? 0xC2 : 0xC0, 0, 17, 8, UInt8(height >> 8), UInt8(height & 0xff),
         UInt8(width >> 8), UInt8(width & 0xff), 3, 1, luma, 0, 2, 0x11, 1, 3, 0x11, 1]
    }
}
