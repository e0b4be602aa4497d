/// How a batch's rows go to SQLite: in multi-row statements of 32 rows, the rest in chunks
/// of 16, 8, 4, 2 and 1, so each table needs six statements, prepared once and cached, and
/// no row count needs a statement of its own. `EventInserts` says why rows go together.
struct RowChunks {
    /// The most rows one statement carries.
    static let largest = 32

    /// One statement per chunk size, smallest first: `head`, then `count` groups of
    /// `columns` placeholders, then `tail`.
    private let statements: [String]

    init(head: String, columns: Int, tail: String = "") {
        let row = "(" + Array(repeating: "?", count: columns).joined(separator: ", ") + ")"
        statements = (0...Self.largest.trailingZeroBitCount).map { power in
            head + Array(repeating: row, count: 1 << power).joined(separator: ", ") + tail
        }
    }

    /// The statement for a chunk of `rows` rows, a power of two up to `largest`.
    func sql(rows: Int) -> String {
        statements[rows.trailingZeroBitCount]
    }

    /// Calls `write` with consecutive slices of `rows` whose sizes are powers of two,
    /// largest first, covering every row once in order.
    static func forEach<Rows: RandomAccessCollection>(_ rows: Rows, _ write: (Rows.SubSequence) throws -> Void) rethrows {
        var start = rows.startIndex
        var size = largest
        while start < rows.endIndex {
            while size > rows.distance(from: start, to: rows.endIndex) { size /= 2 }
            let end = rows.index(start, offsetBy: size)
            try write(rows[start..<end])
            start = end
        }
    }
}
