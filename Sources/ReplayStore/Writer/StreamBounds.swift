import ReplayModel

/// A stream's row after another daemon's commit that changed nothing in it but its bounds
/// (new events, and the oldest ones retention removed), as that daemon's notice carries
/// it (a shared database: `CommitNotice`). The catalog takes it as it is, where it would
/// otherwise read the row again: with two daemons publishing, each read the other's row
/// after every one of its commits, one more wait in a batch of its own.
struct StreamBounds: Sendable, Equatable {
    let id: Int64
    let firstSequence: UInt64
    let lastSequence: UInt64
    let byteCount: Int
    /// The time (ms) of the stream's newest event (`Catalog.Record.lastTime`).
    let lastTime: Int64
    /// Its chain's head and base (`Catalog.Record.chainHead`, `chainBase`): the next
    /// event this daemon appends follows the head.
    let chainHead: EventHash
    let chainBase: EventHash

    /// The bounds of `after`, if a commit that took the stream from `before` to `after`
    /// changed nothing else that another daemon's catalog holds; `nil` otherwise (that
    /// daemon reads the row). Streams with consumers or groups are left to the read: their
    /// rows are not in the stream's.
    static func onlyChange(from before: Catalog.Record?, to after: Catalog.Record) -> StreamBounds? {
        guard let before, before.id == after.id, before.consumers.isEmpty, before.groups.isEmpty,
            after.consumers.isEmpty, after.groups.isEmpty
        else { return nil }
        let bounds = StreamBounds(after)
        return bounds.applied(to: before)?.info == after.info ? bounds : nil
    }

    /// `known` with these bounds; `nil` if they are not of the same stream or are behind
    /// it (a read of the row since, or this daemon's own commit, saw a later state).
    func applied(to known: Catalog.Record) -> Catalog.Record? {
        guard known.id == id, lastSequence >= known.info.lastSequence, firstSequence >= known.info.firstSequence else { return nil }
        var record = known
        record.info.firstSequence = firstSequence
        record.info.lastSequence = lastSequence
        record.info.byteCount = byteCount
        record.lastTime = lastTime
        record.chainHead = chainHead
        record.chainBase = chainBase
        return record
    }
}

extension StreamBounds {
    /// The bounds `record` has (an extension, so that the memberwise initializer stays).
    init(_ record: Catalog.Record) {
        self.init(
            id: record.id, firstSequence: record.info.firstSequence, lastSequence: record.info.lastSequence,
            byteCount: record.info.byteCount, lastTime: record.lastTime, chainHead: record.chainHead, chainBase: record.chainBase)
    }
}
