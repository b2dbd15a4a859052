import Attache
import AttacheEnrichment
/// Draws a payload's report as a timeline: one lane per attachment with its stages, the deadline,
/// the moment the payload was emitted, and the outcome — as text for a terminal, or as SVG.
public struct TimelineRenderer: Sendable {
    public let report: EnrichReport

    public init(report: EnrichReport) {
        self.report = report
    }

    /// The stages drawn, in order, each with its text symbol and its colour (the lab's page draws
    /// with these too).
    public static let stages: [(name: String, symbol: Character, color: String)] = [
        ("dns", "d", "#8e7cc3"), ("connect", "c", "#6fa8dc"), ("tls", "t", "#76a5af"), ("first_byte", "w", "#ffd966"),
        ("download", "=", "#93c47d"), ("inspect", "i", "#f6b26b"), ("render", "r", "#e06666"),
        ("transcode", "v", "#c27ba0"), ("store", "s", "#a61c00"),
    ]

    /// The time span drawn: up to the deadline, unless the payload was out long before it (then
    /// the deadline is off the right edge and the stages would be too thin to see).
    var span: Double {
        let end = max(report.elapsedMs, 1)
        return report.deadlineMs <= end * 3 ? max(report.deadlineMs, end) * 1.05 : end * 1.5
    }

    var deadlineVisible: Bool { report.deadlineMs <= span }

    public func text(width: Int = 64) -> String {
        let scale = Double(width) / span
        func column(_ ms: Double) -> Int { min(width - 1, max(0, Int((ms * scale).rounded(.down)))) }
        let labelWidth = min(18, max(8, (report.attachments.map(\.id.count).max() ?? 0) + 1))
        func label(_ s: String) -> String {
            let cut = String(s.prefix(labelWidth - 1))
            return cut + String(repeating: " ", count: labelWidth - cut.count)
        }
        var lines: [String] = []
        let reason = report.reason.map { " (\($0))" } ?? ""
        lines.append("\(report.outcome.rawValue)\(reason): emitted at \(Int(report.elapsedMs.rounded())) ms, deadline \(Int(report.deadlineMs.rounded())) ms")
        var axis = Array(repeating: Character(" "), count: width)
        let tick = Self.tickStep(span)
        var t = 0.0
        var labels = ""
        while t <= span {
            axis[column(t)] = "┊"
            let text = "\(Int(t))"
            let position = column(t)
            if position >= labels.count { labels += String(repeating: " ", count: position - labels.count) + text }
            t += tick
        }
        lines.append(label("ms") + labels)
        for a in report.attachments {
            var lane = Array(repeating: Character("·"), count: width)
            for span in a.timings.spans {
                guard let stage = Self.stages.first(where: { $0.name == span.stage }) else { continue }
                let from = column(span.start), to = max(from, column(span.start + span.length))
                for c in from...to { lane[c] = stage.symbol }
            }
            if deadlineVisible { lane[column(report.deadlineMs)] = "|" }
            lane[column(report.elapsedMs)] = "▲"
            let result = a.outcome == .attached ? "attached" : "\(a.outcome) \(a.reason?.description ?? "")"
            lines.append(label(a.id) + String(lane) + "  " + result)
        }
        lines.append(String(repeating: " ", count: labelWidth)
            + (deadlineVisible ? "| deadline  " : "(deadline off the right edge)  ") + "▲ emitted  " + Self.stages.map { "\($0.symbol) \($0.name)" }.joined(separator: "  "))
        return lines.joined(separator: "\n")
    }

    public func svg(width: Int = 880) -> String {
        let left = 150.0, right = 20.0, top = 56.0, lane = 34.0
        let plot = Double(width) - left - right
        let height = Int(top + lane * Double(max(1, report.attachments.count)) + 64)
        func x(_ ms: Double) -> Double { left + ms / span * plot }
        func f(_ v: Double) -> String { String(Int(v.rounded())) }
        var out = [
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(width)\" height=\"\(height)\" font-family=\"monospace\" font-size=\"12\">",
            "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>",
            "<text x=\"10\" y=\"20\" font-size=\"14\">\(Self.escape("\(report.outcome.rawValue)\(report.reason.map { " (\($0))" } ?? "")"))"
                + " — emitted at \(f(report.elapsedMs)) ms, deadline \(f(report.deadlineMs)) ms</text>",
        ]
        let tick = Self.tickStep(span)
        var t = 0.0
        while t <= span {
            out.append("<line x1=\"\(f(x(t)))\" y1=\"\(f(top - 8))\" x2=\"\(f(x(t)))\" y2=\"\(height - 44)\" stroke=\"#eeeeee\"/>")
            out.append("<text x=\"\(f(x(t)))\" y=\"\(f(top - 12))\" text-anchor=\"middle\" fill=\"#666\">\(Int(t)) ms</text>")
            t += tick
        }
        for (i, a) in report.attachments.enumerated() {
            let y = top + Double(i) * lane
            out.append("<text x=\"10\" y=\"\(f(y + 20))\">\(Self.escape(String(a.id.prefix(18))))</text>")
            for span in a.timings.spans {
                guard let stage = Self.stages.first(where: { $0.name == span.stage }) else { continue }
                let w = max(1.5, span.length / self.span * plot)
                out.append("<rect x=\"\(f(x(span.start)))\" y=\"\(f(y + 6))\" width=\"\(String(format2: w))\" height=\"20\" fill=\"\(stage.color)\"><title>\(stage.name) \(String(format2: span.length)) ms</title></rect>")
            }
            let result = a.outcome == .attached ? "attached" : "\(a.outcome) \(a.reason?.description ?? "")"
            out.append("<text x=\"\(f(left - 8))\" y=\"\(f(y + 20))\" text-anchor=\"end\" fill=\"\(a.outcome == .attached ? "#38761d" : "#cc0000")\">\(Self.escape(result))</text>")
        }
        let bottom = Double(height - 44)
        if deadlineVisible {
            out.append("<line x1=\"\(f(x(report.deadlineMs)))\" y1=\"\(f(top - 8))\" x2=\"\(f(x(report.deadlineMs)))\" y2=\"\(f(bottom))\" stroke=\"#cc0000\" stroke-width=\"2\" stroke-dasharray=\"6 4\"/>")
        }
        out.append("<line x1=\"\(f(x(report.elapsedMs)))\" y1=\"\(f(top - 8))\" x2=\"\(f(x(report.elapsedMs)))\" y2=\"\(f(bottom))\" stroke=\"#38761d\" stroke-width=\"2\"/>")
        var lx = 10.0
        let ly = Double(height - 18)
        for (name, color) in [("deadline", "#cc0000"), ("emitted", "#38761d")] {
            out.append("<rect x=\"\(f(lx))\" y=\"\(f(ly - 10))\" width=\"12\" height=\"3\" fill=\"\(color)\"/><text x=\"\(f(lx + 16))\" y=\"\(f(ly))\">\(name)</text>")
            lx += 90
        }
        for stage in Self.stages {
            out.append("<rect x=\"\(f(lx))\" y=\"\(f(ly - 11))\" width=\"12\" height=\"12\" fill=\"\(stage.color)\"/><text x=\"\(f(lx + 16))\" y=\"\(f(ly))\">\(stage.name)</text>")
            lx += Double(stage.name.count * 8 + 30)
        }
        out.append("</svg>")
        return out.joined(separator: "\n") + "\n"
    }

    /// A round step giving 4–10 ticks.
    static func tickStep(_ span: Double) -> Double {
        for step in [10.0, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000, 60_000] where span / step <= 10 {
            return step
        }
        return span / 10
    }

    public static func escape(_ s: String) -> String {
        s.replacingEvery("&", "&amp;").replacingEvery("<", "&lt;").replacingEvery(">", "&gt;")
    }
}

extension String {
    init(format2 value: Double) {
        let hundredths = Int((value * 100).rounded())
        let fraction = hundredths % 100
        self = "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }

    func replacingEvery(_ target: Character, _ replacement: String) -> String {
        var out = ""
        for c in self { if c == target { out += replacement } else { out.append(c) } }
        return out
    }
}
