import NIOCore
import PostgresNIO
import ReplayModel

extension PostgresTransaction {
    /// Reads a stream's events in pages, each one query answered by one value.
    ///
    /// - **One value per page.** PostgreSQL packs the page's events into one `bytea` (see
    ///   `packedPage`), which is walked here in place. As one row per event, postgres-nio's
    ///   handling of each row (its state machine on the event loop, then the columns'
    ///   decoding) was most of the daemon's CPU in a catch-up, with retain and release alone
    ///   30 % of the samples, and one reader got 350,000 events/s where PostgreSQL serves
    ///   over a million to a C client (`tools/postgres_ceiling.c`).
    /// - **Bounded by sequence numbers.** A page asks for `seq BETWEEN from AND from + rows
    ///   - 1`: a stream's retained sequence numbers are contiguous, so the range holds the
    ///   page, and the plan is an index range scan of that many rows whatever the planner
    ///   believes. With only `seq BETWEEN from AND through ... LIMIT rows`, a table without
    ///   statistics yet (a stream loaded and read back before autovacuum's ANALYZE) was
    ///   planned as a bitmap scan of every row to the end and a sort, for every page: one
    ///   reader got 30,000 events/s.
    /// - **Sized by bytes.** The first page is small, so that a byte budget stops the read
    ///   soon after it is reached; later pages are sized from the payloads seen so far.
    static func forEachEvent(
        _ segments: LogSegments, limit: Int, byteBudget: Int, _ session: some PostgresQuerying,
        _ body: (UInt64, UnsafeRawBufferPointer, UnsafeRawBufferPointer) -> Void
    ) throws {
        var reading = PageReading(remaining: limit, byteBudget: byteBudget)
        for segment in segments.segments where !reading.isDone {
            var from = Int64(segment.from)
            let through = Int64(min(segment.through, UInt64(Int64.max)))
            while !reading.isDone && from <= through {
                let rows = min(reading.remaining, reading.nextPageRows)
                let last = from > through - Int64(rows - 1) ? through : from + Int64(rows - 1)
                var page = try packedPage(session, stream: segment.streamID, from: from, through: last)
                if page == nil && last < through {
                    // Below the stream's first retained event: find where it starts.
                    page = try packedPage(session, stream: segment.streamID, from: from, through: through, limit: rows)
                }
                guard let page else { break }
                try reading.walk(page, after: &from, body)
            }
        }
    }

    /// The events of `from...through` (at most `limit` of them), packed in order into one
    /// value: per event its sequence number and time (8 bytes each, big-endian), its
    /// payload's length (4 bytes) and the payload. `nil` when there are none.
    private static func packedPage(
        _ session: some PostgresQuerying, stream: Int64, from: Int64, through: Int64, limit: Int? = nil
    ) throws -> ByteBuffer? {
        let packed = "string_agg(int8send(seq) || int8send(time) || int4send(length(payload)) || payload, ''::bytea ORDER BY seq)"
        let result =
            if let limit {
                try session.query(
                    """
                    SELECT \(unescaped: packed) FROM (SELECT seq, time, payload FROM event_log
                    WHERE stream_id = \(stream) AND seq BETWEEN \(from) AND \(through) ORDER BY seq LIMIT \(limit)) page
                    """)
            } else {
                try session.query(
                    "SELECT \(unescaped: packed) FROM event_log WHERE stream_id = \(stream) AND seq BETWEEN \(from) AND \(through)")
            }
        return try single(result, ByteBuffer?.self)
    }
}

/// Where a read stands: how many events and bytes it may still take, and the time text of
/// the last event (consecutive events mostly share their millisecond).
private struct PageReading {
    var remaining: Int
    let byteBudget: Int
    var bytes = 0
    var events = 0
    var time: (millis: Int64, text: [UInt8]) = (.min, [])

    static let firstPageRows = 128
    static let mostPageRows = 4096
    static let header = 20

    init(remaining: Int, byteBudget: Int) {
        self.remaining = remaining
        self.byteBudget = byteBudget
    }

    var isDone: Bool { remaining <= 0 || bytes >= byteBudget }

    var nextPageRows: Int {
        guard events > 0 else { return Self.firstPageRows }
        let average = max(1, bytes / events)
        return min(Self.mostPageRows, max(16, (byteBudget - bytes) / average + 1))
    }

    /// Hands each event of a packed page to `body` until the page or the read's allowance
    /// ends; `from` follows the last one.
    mutating func walk(
        _ page: ByteBuffer, after from: inout Int64, _ body: (UInt64, UnsafeRawBufferPointer, UnsafeRawBufferPointer) -> Void
    ) throws {
        try page.withUnsafeReadableBytes { page in
            var offset = 0
            while offset < page.count && !isDone {
                guard page.count - offset >= Self.header else { throw StoreError.unavailable("PostgreSQL sent a page cut short") }
                let sequence = Int64(bigEndian: page.loadUnaligned(fromByteOffset: offset, as: Int64.self))
                let millis = Int64(bigEndian: page.loadUnaligned(fromByteOffset: offset + 8, as: Int64.self))
                let size = Int(UInt32(bigEndian: page.loadUnaligned(fromByteOffset: offset + 16, as: UInt32.self)))
                let start = offset + Self.header
                guard page.count - start >= size, sequence >= from else { throw StoreError.unavailable("PostgreSQL sent a page out of order") }
                if millis != time.millis { time = (millis, Array(Timestamp.format(millis: millis).utf8)) }
                time.text.withUnsafeBytes { text in body(UInt64(sequence), text, UnsafeRawBufferPointer(rebasing: page[start..<start + size])) }
                offset = start + size
                from = sequence + 1
                remaining -= 1
                events += 1
                bytes += size
            }
        }
    }
}
