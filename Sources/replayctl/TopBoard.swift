import Foundation
import ReplayProtocol

/// What `replayctl top` shows, from successive LIST snapshots: each stream's publish and
/// delivery rates (the change of `last_seq` and `delivered` between two snapshots), its
/// events, the largest lag among its durable consumers and groups, subscribers, scheduled
/// events waiting for their time, source (or derivation; and compaction) and state, sorted. Pure, so that its figures and layout are tested without a terminal.
struct TopBoard {
    enum Order: String, CaseIterable {
        case rate, lag, name
    }

    struct Row: Equatable {
        var name: String
        var published: Double
        var delivered: Double
        var events: Int
        var lag: UInt64?
        var subscribers: Int
        var scheduled: Int
        var source: String
        var state: String
    }

    var order = Order.rate
    private(set) var rows: [Row] = []
    private var previous: (time: Double, counts: [String: (last: UInt64, delivered: Int)])?

    mutating func update(_ streams: [StreamDescription], lags: [String: UInt64], at time: Double) {
        let before = previous
        rows = streams.map { stream in
            var row = Row(
                name: stream.name, published: 0, delivered: 0, events: stream.count, lag: lags[stream.name],
                subscribers: stream.subscribers, scheduled: stream.scheduled ?? 0, source: Self.describe(stream.source, stream.derivation, stream.compaction),
                state: stream.terminal ?? "open")
            if let before, let was = before.counts[stream.name], time > before.time {
                let seconds = time - before.time
                row.published = Double(stream.lastSeq &- min(stream.lastSeq, was.last)) / seconds
                row.delivered = Double(max(0, (stream.delivered ?? 0) - was.delivered)) / seconds
            }
            return row
        }
        previous = (time, Dictionary(streams.map { ($0.name, ($0.lastSeq, $0.delivered ?? 0)) }, uniquingKeysWith: { a, _ in a }))
        sort()
    }

    mutating func cycleOrder() {
        let all = Order.allCases
        order = all[(all.firstIndex(of: order)! + 1) % all.count]
        sort()
    }

    private mutating func sort() {
        switch order {
        case .rate: rows.sort { ($0.published + $0.delivered, $1.name) > ($1.published + $1.delivered, $0.name) }
        case .lag: rows.sort { ($0.lag ?? 0, $1.name) > ($1.lag ?? 0, $0.name) }
        case .name: rows.sort { $0.name < $1.name }
        }
    }

    /// The source column: a source's state, or a derived stream's status and lag behind
    /// its inputs; and for a compacted stream, what its compaction removed.
    static func describe(
        _ source: SourceDescription?, _ derivation: DerivationDescription? = nil, _ compaction: CompactionDescription? = nil
    ) -> String {
        var parts: [String] = []
        if let derivation {
            parts.append("derived \(derivation.status.rawValue), lag \(derivation.lag)")
        } else if let source {
            let restarts = max(0, source.starts - 1)
            parts.append(source.state + (restarts > 0 ? " (\(restarts) restarts)" : ""))
        }
        if let compaction { parts.append("compacted, \(compaction.removed) removed") }
        return parts.joined(separator: "; ")
    }

    /// The screen: a summary line, a header and as many rows as fit, each cut to `width`;
    /// `keys` adds what the keys do.
    func render(width: Int, height: Int, keys: Bool = true) -> [String] {
        let totalIn = rows.reduce(0) { $0 + $1.published }
        let totalOut = rows.reduce(0) { $0 + $1.delivered }
        var lines = [
            "replay top: \(rows.count) streams, \(Self.rate(totalIn)) in, \(Self.rate(totalOut)) out, by \(order.rawValue)"
                + (keys ? "   s: sort  q: quit" : ""),
            "",
        ]
        var table = [["STREAM", "IN/s", "OUT/s", "EVENTS", "LAG", "SUBS", "SCHED", "SOURCE", "STATE"]]
        for row in rows.prefix(max(0, height - 3)) {
            table.append([
                row.name, Self.rate(row.published), Self.rate(row.delivered), "\(row.events)", row.lag.map(String.init) ?? "-",
                "\(row.subscribers)", row.scheduled == 0 ? "-" : "\(row.scheduled)", row.source.isEmpty ? "-" : row.source, row.state,
            ])
        }
        let widths = table[0].indices.map { column in table.map { $0[column].count }.max() ?? 0 }
        let numeric: Set<Int> = [1, 2, 3, 4, 5, 6]
        for cells in table {
            let line = cells.enumerated().map { column, cell in
                let pad = String(repeating: " ", count: widths[column] - cell.count)
                return numeric.contains(column) ? pad + cell : cell + pad
            }.joined(separator: "  ")
            lines.append(String(line.reversed().drop { $0 == " " }.reversed()))
        }
        return lines.map { String($0.prefix(width)) }
    }

    static func rate(_ value: Double) -> String {
        value >= 10_000 ? String(format: "%.0fk", value / 1000) : value >= 10 ? String(format: "%.0f", value) : String(format: "%.1f", value)
    }
}
