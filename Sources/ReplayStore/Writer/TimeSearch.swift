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
    /// after `millis`; `window.upperBound + 1` when there is none. `lookup` finds the first
    /// event at or after a sequence number, and its time: inside a hole (`EventHole`), the
    /// event after it, so the times still never decrease along the window, and the answer
    /// is an event that is there.
    static func firstSequence(
        in window: ClosedRange<UInt64>, atOrAfter millis: Int64, event lookup: (UInt64) throws -> (sequence: UInt64, millis: Int64)?
    ) rethrows -> UInt64 {
        // Nothing after it (the window ends in a hole): later than any time.
        func time(_ sequence: UInt64) throws -> Int64 { try lookup(sequence)?.millis ?? .max }
        func found(_ sequence: UInt64) throws -> UInt64 {
            guard sequence <= window.upperBound else { return sequence }
            return try lookup(sequence)?.sequence ?? window.upperBound + 1
        }
        var low = window.lowerBound
        var high = window.upperBound + 1
        // Most calls (an age check on every commit) find the oldest event young enough.
        if let first = try lookup(low), first.millis >= millis { return first.sequence }
        low += 1
        while low < high {
            let middle = low + (high - low) / 2
            if try time(middle) >= millis { high = middle } else { low = middle + 1 }
        }
        return try found(low)
    }
}
