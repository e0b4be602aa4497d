import Foundation
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
    /// - **Bounded by bytes.** A page ends at the event that reaches the read's byte budget,
    ///   so a page may ask for as many rows as the read may take: a read is mostly one
    ///   query. Most pages are bounded without a running sum (`smallEventsPage`): of `rows`
    ///   events each at most `bytes / rows` long, no page can pass `bytes`. Only a page that
    ///   starts with a longer event takes the running sum (`packedPage`). Its window keeps
    ///   every row, payload and all, in a tuple store, and doubled PostgreSQL's CPU per page,
    ///   which was the bound of a one-reader catch-up: the backend spent a whole core for
    ///   200,000 events/s (docs/PERFORMANCE.md).
    ///
    /// - **Ending at a hole.** A read ends before a hole (events removed from inside the
    ///   window): its reader reports the hole as a gap, and reads on from after it.
    /// - **Checked.** Every page comes with what its own snapshot holds before its first
    ///   event (`chainStart`), and each event's hash is checked against its chain
    ///   (`ChainCheck`) before it is handed on: a corrupt event ends the read with
    ///   `corruptEvent`. `inWriter`: the read is the writer's, whose working record has the
    ///   stream's chain base before its row does.
    static func forEachEvent(
        _ segments: LogSegments, limit: Int, byteBudget: Int, expiredBy: Int64, _ session: some PostgresQuerying, inWriter: Bool = false,
        _ body: EventVisitor
    ) throws {
        var reading = PageReading(remaining: limit, byteBudget: byteBudget)
        for segment in segments.segments where !reading.isDone {
            reading.chain = ChainCheck(stream: segment.stream)
            reading.writerBase = inWriter ? segment.base : nil
            var from = Int64(segment.from)
            let through = Int64(min(segment.through, UInt64(Int64.max)))
            while !reading.isDone && from <= through {
                let rows = min(reading.remaining, PageReading.pageRows)
                let last = from > through - Int64(rows - 1) ? through : from + Int64(rows - 1)
                let bytes = reading.byteBudget - reading.bytes
                let small = try smallEventsPage(
                    session, stream: segment.streamID, from: from, through: last, smallest: bytes / rows, expiredBy: expiredBy)
                if let page = small.page {
                    let start = from
                    reading.startChain(small.start)
                    try reading.walk(page, after: &from, before: small.firstLarge, body)
                    if from > start { continue }
                }
                // The page starts with a longer event, or there is none in the range.
                var page =
                    small.firstLarge == nil
                    ? nil : try packedPage(session, stream: segment.streamID, from: from, through: last, bytes: bytes, expiredBy: expiredBy)
                if page == nil && last < through {
                    // Below the stream's first retained event: find where it starts.
                    page = try packedPage(
                        session, stream: segment.streamID, from: from, through: through, limit: rows, bytes: bytes, expiredBy: expiredBy)
                }
                guard let page else { break }
                reading.startChain(page.start)
                try reading.walk(page.events, after: &from, body)
            }
        }
    }

    /// The events of `from...through` whose payloads are at most `smallest` bytes long,
    /// packed in order into one value as `packedPage` packs them, and the first longer
    /// event's sequence number, if any: the page's events are those before it. One index
    /// range scan and one aggregate, and the value is at most `smallest` times the rows.
    static func smallEventsPage(
        _ session: some PostgresQuerying, stream: Int64, from: Int64, through: Int64, smallest: Int, expiredBy: Int64
    ) throws -> (page: ByteBuffer?, firstLarge: Int64?, start: ChainStart) {
        let result = try session.query(
            """
            SELECT \(unescaped: packedEvents) FILTER (WHERE octet_length(payload) <= \(smallest)),
                min(seq) FILTER (WHERE octet_length(payload) > \(smallest)),
                \(unescaped: chainStart(stream: stream, firstSeq: "min(event_log.seq)"))
            FROM event_log WHERE stream_id = \(stream) AND seq BETWEEN \(from) AND \(through)
                AND (expires_at IS NULL OR expires_at > \(expiredBy))
            """)
        let (page, firstLarge, before, base) = try firstRow(result).decode((ByteBuffer?, Int64?, Data?, Data?).self)
        return (page, firstLarge, ChainStart(before: before, base: base))
    }

    /// What a page's snapshot holds before its first event: the stored hash of the event
    /// before it, or of a hole's last event where a hole ends just before it (`EventHole`;
    /// `nil`: neither; empty: stored before chaining began), and the
    /// stream's chain base. Two lookups by key inside the page's own statement, so both
    /// are as of the snapshot that read the page, whatever retention did since.
    struct ChainStart {
        let before: Data?
        let base: Data?
    }

    private static func chainStart(stream: Int64, firstSeq: String) -> String {
        """
        coalesce(
            (SELECT coalesce(b.hash, ''::bytea) FROM event_log b WHERE b.stream_id = \(stream) AND b.seq = \(firstSeq) - 1),
            (SELECT coalesce(h.hash, ''::bytea) FROM event_holes h WHERE h.stream_id = \(stream) AND h.through_seq = \(firstSeq) - 1)),
        (SELECT chain_base FROM streams WHERE id = \(stream))
        """
    }

    /// The aggregate that packs a page's events into one value (see `packedPage`).
    private static let packedEvents = """
        string_agg(int8send(seq) || int8send(time) || int4send(length(payload)) || int2send(coalesce(octet_length(traceparent), 0)::int2)
            || int2send(coalesce(octet_length(hash), 0)::int2) || int2send(coalesce(octet_length(event_key), 0)::int2)
            || payload || coalesce(convert_to(traceparent, 'UTF8'), ''::bytea) || coalesce(hash, ''::bytea)
            || coalesce(convert_to(event_key, 'UTF8'), ''::bytea), ''::bytea ORDER BY seq)
        """

    /// The events of `from...through` (at most `limit` of them), packed in order into one
    /// value: per event its sequence number and time (8 bytes each, big-endian), its
    /// payload's length (4 bytes), its trace context's, its hash's and its key's (2 bytes
    /// each, 0 for none), the payload, the trace context, the hash and the key. `nil` when there are none; with
    /// what its snapshot holds before its first event.
    ///
    /// The page ends at the event that reaches `bytes` (a running sum of the payloads'
    /// lengths, which PostgreSQL reads from their headers): a page sized from small
    /// payloads that meets large ones would otherwise pack thousands of them into one
    /// value, past what the read may cost and past PostgreSQL's 1 GB for a value.
    static func packedPage(
        _ session: some PostgresQuerying, stream: Int64, from: Int64, through: Int64, limit: Int? = nil, bytes: Int, expiredBy: Int64
    ) throws -> (events: ByteBuffer, start: ChainStart)? {
        let before = "sum(octet_length(payload)) OVER (ORDER BY seq ROWS UNBOUNDED PRECEDING) - octet_length(payload) AS before"
        let result =
            if let limit {
                try session.query(
                    """
                    SELECT \(unescaped: packedEvents), \(unescaped: chainStart(stream: stream, firstSeq: "min(page.seq)"))
                    FROM (SELECT seq, time, payload, traceparent, hash, event_key, \(unescaped: before) FROM (
                        SELECT seq, time, payload, traceparent, hash, event_key FROM event_log
                        WHERE stream_id = \(stream) AND seq BETWEEN \(from) AND \(through)
                            AND (expires_at IS NULL OR expires_at > \(expiredBy)) ORDER BY seq LIMIT \(limit)) first) page
                    WHERE before < \(bytes)
                    """)
            } else {
                try session.query(
                    """
                    SELECT \(unescaped: packedEvents), \(unescaped: chainStart(stream: stream, firstSeq: "min(page.seq)"))
                    FROM (SELECT seq, time, payload, traceparent, hash, event_key, \(unescaped: before) FROM event_log
                        WHERE stream_id = \(stream) AND seq BETWEEN \(from) AND \(through)
                            AND (expires_at IS NULL OR expires_at > \(expiredBy))) page
                    WHERE before < \(bytes)
                    """)
            }
        let (events, beforeFirst, base) = try firstRow(result).decode((ByteBuffer?, Data?, Data?).self)
        return events.map { ($0, ChainStart(before: beforeFirst, base: base)) }
    }
}

/// Where a read stands: how many events and bytes it may still take, and the time text of
/// the last event (consecutive events mostly share their millisecond).
private struct PageReading {
    var remaining: Int
    let byteBudget: Int
    var bytes = 0
    var time: (millis: Int64, text: [UInt8]) = (.min, [])
    /// The segment's chain, checked event by event; started again by each page.
    var chain = ChainCheck(stream: "")
    /// The writer's own chain base for the segment's stream (see `forEachEvent`).
    var writerBase: EventHash?

    /// Rows a page asks for at most; its bytes bound it too.
    static let pageRows = 4096
    static let header = 26

    /// Starts the chain's check from what the page's snapshot holds before its first event.
    mutating func startChain(_ start: PostgresTransaction.ChainStart) {
        if let before = start.before {
            chain.start(after: StreamRow.hash(before))
        } else {
            chain.start(after: writerBase ?? StreamRow.hash(start.base))
        }
    }

    init(remaining: Int, byteBudget: Int) {
        self.remaining = remaining
        self.byteBudget = byteBudget
    }

    /// The next event the read hands on must follow the last one: `nil` before the first.
    var expected: Int64?
    /// The read met a hole after the last event it handed on (see `forEachEvent`).
    var atHole = false

    var isDone: Bool { remaining <= 0 || bytes >= byteBudget || atHole }

    /// Hands each event of a packed page to `body` until the page or the read's allowance
    /// ends, or at an event at `end` or after; `from` follows the last one handed on.
    mutating func walk(
        _ page: ByteBuffer, after from: inout Int64, before end: Int64? = nil,
        _ body: EventVisitor
    ) throws {
        let end = end ?? .max
        try page.withUnsafeReadableBytes { page in
            var offset = 0
            while offset < page.count && !isDone {
                guard page.count - offset >= Self.header else { throw StoreError.unavailable("PostgreSQL sent a page cut short") }
                let sequence = Int64(bigEndian: page.loadUnaligned(fromByteOffset: offset, as: Int64.self))
                let millis = Int64(bigEndian: page.loadUnaligned(fromByteOffset: offset + 8, as: Int64.self))
                let size = Int(UInt32(bigEndian: page.loadUnaligned(fromByteOffset: offset + 16, as: UInt32.self)))
                let traceSize = Int(UInt16(bigEndian: page.loadUnaligned(fromByteOffset: offset + 20, as: UInt16.self)))
                let hashSize = Int(UInt16(bigEndian: page.loadUnaligned(fromByteOffset: offset + 22, as: UInt16.self)))
                let keySize = Int(UInt16(bigEndian: page.loadUnaligned(fromByteOffset: offset + 24, as: UInt16.self)))
                let start = offset + Self.header
                guard page.count - start >= size + traceSize + hashSize + keySize, sequence >= from else {
                    throw StoreError.unavailable("PostgreSQL sent a page out of order")
                }
                guard sequence < end else { return }
                if let expected, sequence != expected {
                    atHole = true
                    return
                }
                if millis != time.millis { time = (millis, Array(Timestamp.format(millis: millis).utf8)) }
                let payload = UnsafeRawBufferPointer(rebasing: page[start..<start + size])
                let trace = traceSize == 0 ? nil : UnsafeRawBufferPointer(rebasing: page[start + size..<start + size + traceSize])
                let hashStart = start + size + traceSize
                let hash = hashSize == 0 ? nil : UnsafeRawBufferPointer(rebasing: page[hashStart..<hashStart + hashSize])
                let keyStart = hashStart + hashSize
                let key = keySize == 0 ? nil : UnsafeRawBufferPointer(rebasing: page[keyStart..<keyStart + keySize])
                try chain.check(sequence: UInt64(sequence), millis: millis, key: key, payload: payload, stored: hash)
                time.text.withUnsafeBytes { text in body(UInt64(sequence), text, payload, trace, hash, key) }
                offset = keyStart + keySize
                from = sequence + 1
                expected = sequence + 1
                remaining -= 1
                bytes += size
            }
        }
    }
}
