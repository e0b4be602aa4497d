extension Array where Element == UInt64 {
    /// The runs of consecutive numbers of an ascending array, in order: a group's
    /// hand-out is read and sent one run of sequence numbers at a time.
    public var consecutiveRuns: [ClosedRange<UInt64>] {
        var runs: [ClosedRange<UInt64>] = []
        var first = startIndex
        while first < endIndex {
            var last = first
            while last + 1 < endIndex, self[last + 1] == self[last] + 1 { last += 1 }
            runs.append(self[first]...self[last])
            first = last + 1
        }
        return runs
    }
}
