/// A producer's stamp on the first event of each publish it makes, in `event_log.stamp`:
/// what `ProducerTable` reads back into a producer's state when its row is behind the log
/// (migration 0011). Three LEB128 varints, a few bytes: the producer by its number in the
/// file (`ref`) rather than its id, which may be a 36-character UUID on every event.
struct EventStamp: Equatable {
    var ref: Int64
    var epoch: UInt64
    var pseq: UInt64

    /// The most bytes a stamp takes: three varints of at most 10 bytes.
    static let maxBytes = 30

    /// The stamp's bytes, in a buffer valid during `body`: one is written with each
    /// publish, so they are not allocated (at most three varints of 10 bytes).
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withUnsafeTemporaryAllocation(byteCount: Self.maxBytes, alignment: 1) { buffer in
            var count = 0
            VarintWriter.put(UInt64(bitPattern: ref), into: buffer, at: &count)
            VarintWriter.put(epoch, into: buffer, at: &count)
            VarintWriter.put(pseq, into: buffer, at: &count)
            return try body(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
        }
    }

    /// The stamp in a column's bytes; `nil` if they are not one (a damaged row).
    init?(_ bytes: UnsafeRawBufferPointer) {
        var reader = VarintReader(Array(bytes))
        guard let ref = reader.next(), let epoch = reader.next(), let pseq = reader.next(), reader.isAtEnd else { return nil }
        self.init(ref: Int64(bitPattern: ref), epoch: epoch, pseq: pseq)
    }

    init(ref: Int64, epoch: UInt64, pseq: UInt64) {
        self.ref = ref
        self.epoch = epoch
        self.pseq = pseq
    }
}
