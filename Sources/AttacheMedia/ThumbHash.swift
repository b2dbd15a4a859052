#if canImport(Glibc)
import Glibc
#endif

/// ThumbHash, Evan Wallace's image placeholder (https://evanw.github.io/thumbhash/): about 25
/// bytes holding a tiny DCT of the image in a luminance/chroma/alpha space, its aspect ratio and
/// whether it has alpha. Written from the published description and reference encoder; an app
/// decodes it to a blurred preview while the attachment loads.
public enum ThumbHash {
    /// The hash of an image of at most 100x100 pixels, straight RGBA, row by row.
    public static func encode(width w: Int, height h: Int, rgba: [UInt8]) -> [UInt8] {
        precondition(w > 0 && h > 0 && w <= 100 && h <= 100 && rgba.count == w * h * 4)
        let count = w * h
        // The average colour, alpha-weighted.
        var avgR = 0.0, avgG = 0.0, avgB = 0.0, avgA = 0.0
        for i in 0..<count {
            let alpha = Double(rgba[i * 4 + 3]) / 255
            avgR += alpha / 255 * Double(rgba[i * 4])
            avgG += alpha / 255 * Double(rgba[i * 4 + 1])
            avgB += alpha / 255 * Double(rgba[i * 4 + 2])
            avgA += alpha
        }
        if avgA > 0 {
            avgR /= avgA
            avgG /= avgA
            avgB /= avgA
        }
        let hasAlpha = avgA < Double(count)
        let lLimit = hasAlpha ? 5.0 : 7.0  // fewer luminance terms when alpha needs the room
        let longest = Double(max(w, h))
        let lx = max(1, Int(round(lLimit * Double(w) / longest)))
        let ly = max(1, Int(round(lLimit * Double(h) / longest)))

        // LPQA: luminance, yellow-blue, red-green, alpha, composited over the average colour.
        var l = [Double](repeating: 0, count: count), p = l, q = l, a = l
        for i in 0..<count {
            let alpha = Double(rgba[i * 4 + 3]) / 255
            let r = avgR * (1 - alpha) + alpha / 255 * Double(rgba[i * 4])
            let g = avgG * (1 - alpha) + alpha / 255 * Double(rgba[i * 4 + 1])
            let b = avgB * (1 - alpha) + alpha / 255 * Double(rgba[i * 4 + 2])
            l[i] = (r + g + b) / 3
            p[i] = (r + g) / 2 - b
            q[i] = r - g
            a[i] = alpha
        }

        let (lDC, lAC, lScale) = channel(l, w: w, h: h, nx: max(3, lx), ny: max(3, ly))
        let (pDC, pAC, pScale) = channel(p, w: w, h: h, nx: 3, ny: 3)
        let (qDC, qAC, qScale) = channel(q, w: w, h: h, nx: 3, ny: 3)
        let alphaTerms = hasAlpha ? channel(a, w: w, h: h, nx: 5, ny: 5) : nil

        let landscape = w > h
        let header24 = Int(round(63 * lDC)) | Int(round(31.5 + 31.5 * pDC)) << 6 | Int(round(31.5 + 31.5 * qDC)) << 12
            | Int(round(31 * lScale)) << 18 | (hasAlpha ? 1 << 23 : 0)
        let header16 = (landscape ? ly : lx) | Int(round(63 * pScale)) << 3 | Int(round(63 * qScale)) << 9 | (landscape ? 1 << 15 : 0)
        var hash: [UInt8] = [UInt8(header24 & 255), UInt8(header24 >> 8 & 255), UInt8(header24 >> 16 & 255),
                             UInt8(header16 & 255), UInt8(header16 >> 8 & 255)]
        if let (aDC, _, aScale) = alphaTerms {
            hash.append(UInt8(Int(round(15 * aDC)) | Int(round(15 * aScale)) << 4))
        }
        // The varying terms, four bits each, two to a byte.
        let terms = lAC + pAC + qAC + (alphaTerms?.ac ?? [])
        let start = hash.count
        hash += [UInt8](repeating: 0, count: (terms.count + 1) / 2)
        for (index, f) in terms.enumerated() {
            hash[start + index >> 1] |= UInt8(Int(round(15 * f)) << ((index & 1) << 2))
        }
        return hash
    }

    /// JavaScript's Math.round, which the reference uses (half up): every value here is >= 0.
    private static func round(_ x: Double) -> Double { (x + 0.5).rounded(.down) }

    /// The DC term, and the AC terms of the triangle `cx * ny < nx * (ny - cy)` normalised to 0…1.
    private static func channel(_ values: [Double], w: Int, h: Int, nx: Int, ny: Int) -> (dc: Double, ac: [Double], scale: Double) {
        var dc = 0.0, ac: [Double] = [], scale = 0.0
        var fx = [Double](repeating: 0, count: w)
        for cy in 0..<ny {
            var cx = 0
            while cx * ny < nx * (ny - cy) {
                for x in 0..<w { fx[x] = cos(Double.pi / Double(w) * Double(cx) * (Double(x) + 0.5)) }
                var f = 0.0
                for y in 0..<h {
                    let fy = cos(Double.pi / Double(h) * Double(cy) * (Double(y) + 0.5))
                    for x in 0..<w { f += values[x + y * w] * fx[x] * fy }
                }
                f /= Double(w * h)
                if cx > 0 || cy > 0 {
                    ac.append(f)
                    scale = max(scale, abs(f))
                } else {
                    dc = f
                }
                cx += 1
            }
        }
        if scale > 0 { ac = ac.map { 0.5 + 0.5 / scale * $0 } }
        return (dc, ac, scale)
    }
}
