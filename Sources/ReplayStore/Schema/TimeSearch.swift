import GRDB

/// Finds the first retained event stored at or after a time, for `since=` starts and age
/// limits, without an index on time.
///
/// Times never decrease within a stream (the writer holds a stream at its last time if the
/// clock steps back), so a binary search on seq over the retained window finds it in
/// log2(events) rowid lookups: about 20 for a million events. The alternative measured by
/// tools/sqlite_ceiling.py, a table with one row per (stream, commit), finds it in one
/// lookup but costs a row in every transaction; publishing is the hot path, a time start
/// is not.
enum TimeSearch {
    /// The first sequence number in the stream's retained `window` whose time is at or
    /// after `millis`; `window.upperBound + 1` when there is none.
    static func firstSequence(of stream: Int64, in window: ClosedRange<UInt64>, atOrAfter millis: Int64, _ db: Database) throws -> UInt64 {
        let lookup = try db.cachedStatement(sql: "SELECT time FROM event_log WHERE key = ?")
        func time(_ sequence: UInt64) throws -> Int64 {
            // A row missing inside the window cannot happen (trims remove from the front);
            // treated as "later", it can only make the search start later, never earlier.
            try Int64.fetchOne(lookup, arguments: [EventKey.key(stream: stream, sequence: sequence)]) ?? .max
        }
        var low = window.lowerBound
        var high = window.upperBound + 1
        // Most calls (an age check on every commit) find the oldest event young enough.
        if try time(low) >= millis { return low }
        low += 1
        while low < high {
            let middle = low + (high - low) / 2
            if try time(middle) >= millis { high = middle } else { low = middle + 1 }
        }
        return low
    }
}
