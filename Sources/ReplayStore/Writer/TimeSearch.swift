/// Finds the first retained event stored at or after a time, for `since=` starts and age
/// limits, without an index on time.
///
/// Times never decrease within a stream (the writer holds a stream at its last time if the
/// clock steps back), so a binary search on seq over the retained window finds it in
/// log2(events) primary-key lookups: about 20 for a million events. The alternative measured by
/// tools/sqlite_ceiling.py, a table with one row per (stream, commit), finds it in one
/// lookup but costs a row in every transaction; publishing is the hot path, a time start
/// is not.
enum TimeSearch {
    /// The first sequence number in the stream's retained `window` whose time is at or
    /// after `millis`; `window.upperBound + 1` when there is none. `time` looks one event's
    /// time up by its sequence number.
    static func firstSequence(
        in window: ClosedRange<UInt64>, atOrAfter millis: Int64, time lookup: (UInt64) throws -> Int64?
    ) rethrows -> UInt64 {
        // A row missing inside the window cannot happen (trims remove from the front);
        // treated as "later", it can only make the search start later, never earlier.
        func time(_ sequence: UInt64) throws -> Int64 { try lookup(sequence) ?? .max }
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
