import ReplayStore

/// The one cursor over a stream's log, which every kind of reader frames its own way: a
/// socket subscription as EVENT frames (`Subscription`), an HTTP read as a body or SSE
/// events (`HTTPCursor`), and the coming group and subscription readers as theirs.
///
/// Its state is `next`, the first event wanted: memory per reader is one integer. Each
/// `move` asks the stream's `StreamHub` what to do at `next` and does it, and these are
/// decided here once for every reader:
/// - recent events come from the hub's tail ring, older ones from the store (a page at a
///   time, the next one read while the reader writes this one, where it asks for that);
/// - history retention no longer holds is a gap, whether the hub knew it or the store
///   showed it (a page that starts late is held back until the gap before it is reported);
/// - a store that is away is waited for (`CursorRetry`) at the same position;
/// - the stream's end, its terminal event, and its deletion end the cursor.
struct LogCursor<Log: StoredLog, Framing: LogFraming>: Sendable {
    /// What the reader should send or do after one move.
    enum Move: Sendable {
        /// Events from the tail ring, shared with every other reader of the stream.
        case ring([TailRing.Entry])
        /// Events read from the store, framed by the reader's framing.
        case stored(StoredPage<Framing.Page>)
        /// Events `from...through` are no longer retained.
        case gap(from: UInt64, through: UInt64)
        /// Nothing after the position yet: park in `waitForCommit` and move again.
        case caughtUp
        /// The stream ended after `lastSequence` (closed or failed).
        case ended(Terminal, lastSequence: UInt64)
        /// The stream was deleted.
        case deleted
    }

    let hub: StreamHub
    /// Generic rather than `any StoredLog`, so that a page's per-event framing is
    /// specialized: catch-up runs it a few million times a second.
    let log: Log
    let framing: Framing
    /// Events up to here are history (replayed while retained); later ones are live.
    let liveAfter: UInt64
    let retry: CursorRetry
    /// Whether the next page is read while the reader writes the current one: the disk and
    /// the socket then work at the same time. A reader that takes one page per request
    /// (HTTP) does not want it.
    let readAhead: Bool
    /// The first event wanted.
    private(set) var next: UInt64
    /// A page read past a gap, delivered by the move after the gap's.
    private var held: StoredPage<Framing.Page>?
    private var ahead: (from: UInt64, through: UInt64, read: Task<StoredPage<Framing.Page>, any Error>)?

    init(
        hub: StreamHub, log: Log, framing: Framing, from next: UInt64, liveAfter: UInt64 = .max,
        retry: CursorRetry, readAhead: Bool = false
    ) {
        self.hub = hub
        self.log = log
        self.framing = framing
        self.next = next
        self.liveAfter = liveAfter
        self.retry = retry
        self.readAhead = readAhead
    }

    /// One step: at most `limit` events and about `byteBudget` bytes. Ring events from
    /// `sharingFrom` bytes on carry their shared buffer (see `TailRing.slice`).
    @inline(never)  // its callers' frames stay theirs (see moveFromStore)
    mutating func move(limit: Int, byteBudget: Int, sharingFrom: Int = .max) async throws -> Move {
        switch moveInMemory(limit: limit, byteBudget: byteBudget, sharingFrom: sharingFrom) {
        case .done(let move): return move
        case .read(let through): return try await moveFromStore(through: through, limit: limit, byteBudget: byteBudget, sharingFrom: sharingFrom)
        }
    }

    /// A move that reads the store, waiting out a store that is away. Its own function,
    /// never inlined: a live reader seldom comes here, and an async function's frame is
    /// allocated whole on every call (an SSE reader's connection task keeps the deepest
    /// it has needed).
    @inline(never)
    private mutating func moveFromStore(through first: UInt64, limit: Int, byteBudget: Int, sharingFrom: Int) async throws -> Move {
        var attempt = 0
        var through = first
        while true {
            do {
                let page = try await read(through: through, limit: limit, byteBudget: byteBudget)
                return stored(page, through: through, limit: limit, byteBudget: byteBudget)
            } catch let error as StoreError {
                guard case .unavailable = error, let delay = retry.delay(before: attempt) else { throw error }
                try await retry.sleep(delay)
                attempt += 1
            }
            switch moveInMemory(limit: limit, byteBudget: byteBudget, sharingFrom: sharingFrom) {
            case .done(let move): return move
            case .read(let last): through = last
            }
        }
    }

    /// A move that needs no store, or `nil` when the next events must be read from it
    /// (then `move`). Not async: a live reader's every step is one of these, and a reader
    /// that tries it first (`Subscription`) makes no async call per step. With 100
    /// subscribers (replay-bench fan-out ×100), the cursor without this delivered 0.89-0.94×
    /// of the deliveries per second of the code before it, and with it 1.02-1.04×.
    mutating func moveFromMemory(limit: Int, byteBudget: Int, sharingFrom: Int = .max) -> Move? {
        if case .done(let move) = moveInMemory(limit: limit, byteBudget: byteBudget, sharingFrom: sharingFrom) { return move }
        return nil
    }

    private enum Decision {
        case done(Move)
        case read(through: UInt64)
    }

    private mutating func moveInMemory(limit: Int, byteBudget: Int, sharingFrom: Int) -> Decision {
        if let page = held {
            held = nil
            next = page.last + 1
            return .done(.stored(page))
        }
        let step = hub.step(at: next, liveAfter: liveAfter, limit: limit, byteBudget: byteBudget, sharingFrom: sharingFrom)
        if case .read = step {} else if ahead != nil { stopReadingAhead() }
        switch step {
        case .send(let entries):
            next = (entries.last?.sequence ?? next - 1) + 1
            return .done(.ring(entries))
        case .read(let through):
            return .read(through: through)
        case .gap(let through):
            defer { next = through + 1 }
            return .done(.gap(from: next, through: through))
        case .wait:
            return .done(.caughtUp)
        case .end(let terminal, let last):
            return .done(.ended(terminal, lastSequence: last))
        case .deleted:
            return .done(.deleted)
        }
    }

    /// Returns once something may follow the position (a commit, the end, a deletion), or
    /// when the task is cancelled.
    func waitForCommit() async {
        await hub.waitForCommit(after: watched.after)
    }

    /// What a wait for the next commit watches: the hub, past the last event delivered.
    var watched: (hub: StreamHub, after: UInt64) { (hub, next - 1) }

    /// Whether `skip` may move it: no page is held back for its next move.
    var canSkip: Bool { held == nil }

    /// Moves past `last` without reading: another reader at the same position framed the
    /// same events (`SharedFrames`).
    mutating func skip(through last: UInt64) {
        precondition(held == nil && last + 1 >= next, "a cursor at \(next) cannot skip to \(last + 1)")
        stopReadingAhead()
        next = last + 1
    }

    /// Drops a page being read ahead; a reader that stops early calls it.
    mutating func stopReadingAhead() {
        ahead?.read.cancel()
        ahead = nil
    }

    private mutating func read(through: UInt64, limit: Int, byteBudget: Int) async throws -> StoredPage<Framing.Page> {
        if let ahead, ahead.from == next, ahead.through == through {
            self.ahead = nil
            return try await ahead.read.value
        }
        stopReadingAhead()
        return try await log.read(hub.name, from: next, through: through, limit: limit, byteBudget: byteBudget, framing: framing)
    }

    /// A page the store gave for `next...through`: what retention trimmed since the hub
    /// listed it is a gap, reported before the page.
    private mutating func stored(_ page: StoredPage<Framing.Page>, through: UInt64, limit: Int, byteBudget: Int) -> Move {
        guard let first = page.first else {
            defer { next = through + 1 }
            return .gap(from: next, through: through)
        }
        if readAhead, page.last < through {
            let (log, framing, name, from) = (log, framing, hub.name, page.last + 1)
            ahead = (from, through, Task { try await log.read(name, from: from, through: through, limit: limit, byteBudget: byteBudget, framing: framing) })
        }
        if first > next {
            held = page
            defer { next = first }
            return .gap(from: next, through: first - 1)
        }
        next = page.last + 1
        return .stored(page)
    }
}
