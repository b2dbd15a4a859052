import Attache
import AttacheEnrichment

/// A sweep of one payload over deadlines × fault profiles, as a grid of outcomes: written as CSV
/// for a spreadsheet and as an SVG heat map. Every cell says its outcome in words and by a symbol
/// as well as by its colour, so the map reads in grey too.
public struct SweepGrid: Sendable {
    public struct Cell: Sendable, Equatable {
        public var deadlineMs: Int
        public var profile: String
        public var outcome: Outcome
        public var reason: Reason?
        public var elapsedMs: Double
        public var attached: Int
        public var attachments: Int

        public init(deadlineMs: Int, profile: String, outcome: Outcome, reason: Reason?, elapsedMs: Double, attached: Int, attachments: Int) {
            self.deadlineMs = deadlineMs
            self.profile = profile
            self.outcome = outcome
            self.reason = reason
            self.elapsedMs = elapsedMs
            self.attached = attached
            self.attachments = attachments
        }

        public init(deadlineMs: Int, profile: String, report: EnrichReport) {
            self.init(deadlineMs: deadlineMs, profile: profile, outcome: report.outcome, reason: report.reason,
                      elapsedMs: report.elapsedMs, attached: report.attachments.filter { $0.outcome == .attached }.count,
                      attachments: report.attachments.count)
        }
    }

    /// Columns, in order.
    public var deadlinesMs: [Int]
    /// Rows, in order.
    public var profiles: [String]
    public var cells: [Cell]

    public init(deadlinesMs: [Int], profiles: [String], cells: [Cell]) {
        self.deadlinesMs = deadlinesMs
        self.profiles = profiles
        self.cells = cells
    }

    /// Fill colour and the symbol that says the same without it.
    public static let look: [Outcome: (color: String, symbol: String)] = [
        .enriched: ("#b6d7a8", "✓"), .partial: ("#ffe599", "◐"), .fallback: ("#ea9999", "✗"), .passthrough: ("#d9d9d9", "–"),
    ]

    public func cell(profile: String, deadlineMs: Int) -> Cell? {
        cells.first { $0.profile == profile && $0.deadlineMs == deadlineMs }
    }

    /// One row per run, rows by profile then deadline.
    public func csv() -> String {
        var lines = ["profile,deadline_ms,outcome,reason,elapsed_ms,attached,attachments"]
        for profile in profiles {
            for deadline in deadlinesMs {
                guard let c = cell(profile: profile, deadlineMs: deadline) else { continue }
                lines.append([Self.csvField(profile), "\(deadline)", c.outcome.rawValue, c.reason?.description ?? "",
                              String(format2: c.elapsedMs), "\(c.attached)", "\(c.attachments)"].joined(separator: ","))
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    public func svg() -> String {
        let left = 170.0, top = 46.0, cellWidth = 118.0, cellHeight = 44.0
        let width = Int(left + cellWidth * Double(deadlinesMs.count) + 16)
        let height = Int(top + cellHeight * Double(profiles.count) + 40)
        func f(_ v: Double) -> String { String(Int(v.rounded())) }
        var out = [
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(width)\" height=\"\(height)\" font-family=\"monospace\" font-size=\"12\">",
            "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>",
            "<text x=\"10\" y=\"18\" font-size=\"14\">outcome by fault (rows) and deadline (columns); time until the payload was out</text>",
        ]
        for (column, deadline) in deadlinesMs.enumerated() {
            out.append("<text x=\"\(f(left + cellWidth * (Double(column) + 0.5)))\" y=\"\(f(top - 8))\" text-anchor=\"middle\">\(deadline) ms</text>")
        }
        for (row, profile) in profiles.enumerated() {
            let y = top + cellHeight * Double(row)
            out.append("<text x=\"10\" y=\"\(f(y + cellHeight / 2 + 4))\">\(TimelineRenderer.escape(String(profile.prefix(20))))</text>")
            for (column, deadline) in deadlinesMs.enumerated() {
                let x = left + cellWidth * Double(column)
                guard let c = cell(profile: profile, deadlineMs: deadline) else {
                    out.append("<rect x=\"\(f(x))\" y=\"\(f(y))\" width=\"\(f(cellWidth - 2))\" height=\"\(f(cellHeight - 2))\" fill=\"#f3f3f3\"/>")
                    continue
                }
                let look = Self.look[c.outcome] ?? ("#ffffff", "?")
                out.append("<rect x=\"\(f(x))\" y=\"\(f(y))\" width=\"\(f(cellWidth - 2))\" height=\"\(f(cellHeight - 2))\" fill=\"\(look.color)\"><title>\(c.outcome.rawValue)\(c.reason.map { " (\($0))" } ?? "") \(c.attached)/\(c.attachments) attached</title></rect>")
                out.append("<text x=\"\(f(x + 6))\" y=\"\(f(y + 17))\">\(look.symbol) \(c.outcome.rawValue)</text>")
                out.append("<text x=\"\(f(x + 6))\" y=\"\(f(y + 33))\" fill=\"#333\">\(Int(c.elapsedMs.rounded())) ms</text>")
            }
        }
        var lx = 10.0
        let ly = Double(height - 14)
        for outcome in [Outcome.enriched, .partial, .fallback, .passthrough] {
            let look = Self.look[outcome]!
            out.append("<rect x=\"\(f(lx))\" y=\"\(f(ly - 11))\" width=\"12\" height=\"12\" fill=\"\(look.color)\"/><text x=\"\(f(lx + 16))\" y=\"\(f(ly))\">\(look.symbol) \(outcome.rawValue)</text>")
            lx += 130
        }
        out.append("</svg>")
        return out.joined(separator: "\n") + "\n"
    }

    /// A field quoted when it holds a comma, a quote or a line break (RFC 4180).
    static func csvField(_ text: String) -> String {
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
        return "\"" + text.replacingEvery("\"", "\"\"") + "\""
    }
}
