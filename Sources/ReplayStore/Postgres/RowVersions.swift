import Foundation

/// What this daemon last saw of each stream's row in PostgreSQL, for batches written
/// without the locks (`PostgresTransaction.Mode.cached`).
///
/// A row's version is its `xmin`, the id of the transaction that wrote it: every UPDATE,
/// by any daemon or by hand, makes a new row version with a new `xmin`, so a row that
/// still has the `xmin` this daemon saw is the row its catalog holds, with nothing changed
/// by anyone since. No column or trigger to keep up, and nothing another writer can forget
/// to move.
///
/// Where a batch's streams all have a known version, the batch is numbered from the
/// catalog, as a lone writer's is, and written in one statement per stream that checks
/// the version in its `WHERE`: one round trip per stream plus `BEGIN` and `COMMIT`, where
/// the locked batch needs the name locks and a read of the rows first. Where another
/// daemon wrote the row meanwhile, the statement fails the transaction and the batch runs
/// again under the locks; a stream that another daemon wrote lately is written under the
/// locks at once for a while (`contentionWindow`), so that two daemons writing one stream
/// do not each pay for a failed try per batch.
struct RowVersions: Sendable {
    /// How long a stream that another daemon wrote is written under the locks.
    static let contentionWindow: Duration = .seconds(1)

    private var versions: [Int64: Int64] = [:]
    private var contendedUntil: [Int64: ContinuousClock.Instant] = [:]

    /// The version a batch may write `record` on without the locks; `nil`: it must take
    /// them. Besides an unknown or contended row, that is a stream whose append may have to
    /// read or change more than its row and its new events: one with consumer groups or
    /// retention that waits for them (their pending rows decide what is kept), with an age
    /// or byte limit (found by reading the stored events), or at its capacity (every append
    /// removes events, and the rules need the bytes that frees).
    func version(for record: Catalog.Record, at now: ContinuousClock.Instant) -> Int64? {
        guard let version = versions[record.id] else { return nil }
        if let until = contendedUntil[record.id], until > now { return nil }
        let config = record.info.config
        guard record.groups.isEmpty, config.keepUnacked == nil, config.maxAge == nil, config.maxBytes == nil,
            !record.info.isSoftDeleted
        else { return nil }
        if let capacity = config.capacity, record.info.eventCount >= capacity { return nil }
        return version
    }

    /// Versions read or written by a committed transaction.
    mutating func learn(_ seen: [Int64: Int64]) {
        versions.merge(seen) { _, new in new }
    }

    /// Rows whose version is no longer known (a failed or undone transaction wrote them,
    /// or another daemon did): the next batch on them reads them under the locks.
    mutating func forget(_ ids: some Sequence<Int64>) {
        for id in ids { versions[id] = nil }
    }

    /// Rows another daemon wrote: forgotten, and written under the locks for a while.
    mutating func contended(_ ids: some Sequence<Int64>, at now: ContinuousClock.Instant) {
        for id in ids {
            versions[id] = nil
            contendedUntil[id] = now + Self.contentionWindow
        }
        if contendedUntil.count > 4096 { contendedUntil = contendedUntil.filter { $0.value > now } }
    }
}
