import AttachePayload
import AttacheTesting
import Testing
@testable import AttacheMedia

@Suite struct SnifferTests {
    @Test(arguments: [
        ("photo.jpg", MediaFormat.jpeg), ("progressive.jpg", .jpeg), ("alpha.png", .png), ("palette.png", .png),
        ("animated.gif", .gif), ("image.webp", .webp), ("rotated.jpg", .jpeg), ("photo.heic", .heic), ("alpha.heic", .heic),
        ("photo.avif", .avif), ("animated.avif", .avif), ("animated.webp", .webp), ("photo.jxl", .jxl),
    ])
    func samples(_ name: String, _ format: MediaFormat) {
        #expect(Sniffer.sniff(Fixtures.bytes(name)) == format)
    }

    @Test func isoBrandsAndOthers() {
        func ftyp(_ brand: String, _ compatible: [String] = []) -> [UInt8] {
            let size = 16 + compatible.count * 4
            return [0, 0, 0, UInt8(size)] + Array("ftyp".utf8) + Array(brand.utf8) + [0, 0, 0, 0] + compatible.flatMap { Array($0.utf8) }
        }
        #expect(Sniffer.sniff(ftyp("heic", ["mif1", "heic"])) == .heic)
        #expect(Sniffer.sniff(ftyp("avif", ["mif1"])) == .avif)
        #expect(Sniffer.sniff(ftyp("mif1", ["avif"])) == .avif)
        #expect(Sniffer.sniff(ftyp("isom", ["mp41"])) == .mp4)
        #expect(Sniffer.sniff(ftyp("qt  ")) == .mov)
        #expect(Sniffer.sniff(ftyp("M4A ")) == .m4a)
        #expect(Sniffer.sniff(Array("ID3\u{3}".utf8)) == .mp3)
        #expect(Sniffer.sniff(Array("RIFF\0\0\0\0WAVEfmt ".utf8)) == .wav)
        #expect(Sniffer.sniff(Array("FORM\0\0\0\0AIFF".utf8)) == .aiff)
        // EBML: WebM or Matroska by the header's DocType; Matroska when it says nothing.
        let ebml: [UInt8] = [0x1A, 0x45, 0xDF, 0xA3, 0x9F, 0x42, 0x86, 0x81, 0x01, 0x42, 0x82]
        #expect(Sniffer.sniff(ebml + [0x84] + Array("webm".utf8)) == .webm)
        #expect(Sniffer.sniff(ebml + [0x88] + Array("matroska".utf8)) == .mkv)
        #expect(Sniffer.sniff([0x1A, 0x45, 0xDF, 0xA3, 0x9F]) == .mkv)
        #expect(Sniffer.sniff(Fixtures.bytes("clip-vp9.webm")) == .webm)
        #expect(Sniffer.sniff(Fixtures.bytes("clip-h264.mkv")) == .mkv)
        #expect(Sniffer.sniff([0xFF, 0x0A, 0xFA, 0x1F]) == .jxl)  // JPEG XL codestream
        #expect(Sniffer.sniff([0, 0, 0, 0x0C] + Array("JXL ".utf8) + [0x0D, 0x0A, 0x87, 0x0A]) == .jxl)  // and container
        #expect(Sniffer.sniff(ftyp("msf1", ["heic"])) == .heic)
        #expect(Sniffer.sniff(ftyp("avis", ["msf1"])) == .avif)
        #expect(Sniffer.sniff(Array("<!doctype html><html>".utf8)) == nil)
        #expect(Sniffer.sniff(Array("#EXTM3U\n".utf8)) == nil)
        #expect(Sniffer.sniff([]) == nil)
    }
}
