import ReplayStore

/// How one kind of reader turns stored events into what it sends. It runs on a read-pool
/// thread, straight from the store's row buffers, so a page is built where it is read and
/// no event is copied twice: the socket writes wire frames, HTTP gathers payloads.
protocol LogFraming: Sendable {
    associatedtype Page: Sendable

    func emptyPage() -> Page
    /// `hash`: the event's hash-chain link as stored (32 bytes; `nil` if it has none);
    /// `key`: its key (`nil`: none).
    func append(
        sequence: UInt64, time: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer, trace: UnsafeRawBufferPointer?,
        hash: UnsafeRawBufferPointer?, key: UnsafeRawBufferPointer?, to page: inout Page)
}

/// One read of the store: the events of `first...last` as the framing built them.
struct StoredPage<Body: Sendable>: Sendable {
    var body: Body
    /// The first event read; `nil` when retention left nothing in the range.
    var first: UInt64?
    var last: UInt64 = 0
    var events = 0
    var payloadBytes = 0
}

/// Where a cursor reads what its stream's tail ring no longer holds. The daemon's is the
/// store on the read pool (`PooledStore`); the cursor's unit tests give an array.
protocol StoredLog: Sendable {
    func read<Framing: LogFraming>(
        _ stream: String, from: UInt64, through: UInt64, limit: Int, byteBudget: Int, framing: Framing
    ) async throws -> StoredPage<Framing.Page>
}

/// The store, read on the read pool so that no event loop or cooperative thread waits on
/// the disk or the database.
struct PooledStore: StoredLog {
    let store: EventStore
    let reads: ReadPool

    func read<Framing: LogFraming>(
        _ stream: String, from: UInt64, through: UInt64, limit: Int, byteBudget: Int, framing: Framing
    ) async throws -> StoredPage<Framing.Page> {
        let store = self.store
        return try await reads.run {
            var page = StoredPage(body: framing.emptyPage())
            do {
                try store.forEachEvent(in: stream, from: from, through: through, limit: limit, byteBudget: byteBudget) {
                    sequence, time, payload, trace, hash, key in
                    if page.first == nil { page.first = sequence }
                    page.last = sequence
                    page.events += 1
                    page.payloadBytes += payload.count
                    framing.append(sequence: sequence, time: time, payload: payload, trace: trace, hash: hash, key: key, to: &page.body)
                }
            } catch {
                // The events before a corrupt one are good and go out; the next read starts
                // at the corrupt event and fails with nothing before it.
                guard case StoreError.corruptEvent = error, page.events > 0 else { throw error }
            }
            return page
        }
    }

    /// The current event of every key of `stream` up to `through` (`SUB … snapshot`).
    func snapshot(_ stream: String, through: UInt64) async throws -> [UInt64] {
        let store = self.store
        return try await reads.run { try store.currentEvents(of: stream, through: through) }
    }

    /// The events `sequences` of `stream` as `framing` builds them, up to about
    /// `byteBudget` bytes of payload, and how many of `sequences` that took (an event no
    /// longer retained is passed over).
    func read<Framing: LogFraming>(
        _ stream: String, at sequences: ArraySlice<UInt64>, byteBudget: Int, framing: Framing
    ) async throws -> (page: StoredPage<Framing.Page>, taken: Int) {
        let store = self.store
        return try await reads.run {
            var page = StoredPage(body: framing.emptyPage())
            do {
                let taken = try store.forEachEvent(in: stream, at: sequences, byteBudget: byteBudget) { sequence, time, payload, trace, hash, key in
                    if page.first == nil { page.first = sequence }
                    page.last = sequence
                    page.events += 1
                    page.payloadBytes += payload.count
                    framing.append(sequence: sequence, time: time, payload: payload, trace: trace, hash: hash, key: key, to: &page.body)
                }
                return (page, taken)
            } catch {
                // As `read`: the events before a corrupt one go out; the next read starts
                // at the corrupt one and fails with nothing before it.
                guard case StoreError.corruptEvent = error, page.events > 0, let index = sequences.firstIndex(of: page.last) else { throw error }
                return (page, index - sequences.startIndex + 1)
            }
        }
    }
}
