import Foundation
import ReplayCore
import ReplayProtocol
import ReplaySync
import Testing

@testable import ReplayServer
@testable import ReplayStore

/// The one cursor core, without a daemon or a database: a hub in memory and a stored log
/// that is an array, which can trim, and be away for a while.
@Suite("LogCursor")
struct LogCursorTests {
    /// The store's side: events 1...10, of which those below `firstKept` were trimmed
    /// since the hub last heard; away (`StoreError.unavailable`) for its first
    /// `awayFor` reads. It records where each read began.
    final class ArrayLog: StoredLog {
        private struct State {
            var firstKept: UInt64 = 1
            var awayFor = 0
            var reads: [UInt64] = []
        }
        private let state: Locked<State>
        let events = StreamHubTests.events(1...10)

        init(firstKept: UInt64 = 1, awayFor: Int = 0) {
            state = Locked(State(firstKept: firstKept, awayFor: awayFor))
        }

        var reads: [UInt64] { state.withLock { $0.reads } }

        func read<Framing: LogFraming>(
            _ stream: String, from: UInt64, through: UInt64, limit: Int, byteBudget: Int, framing: Framing
        ) async throws -> StoredPage<Framing.Page> {
            let firstKept = try state.withLock { state throws(StoreError) -> UInt64 in
                state.reads.append(from)
                guard state.awayFor == 0 else {
                    state.awayFor -= 1
                    throw .unavailable("the database is restarting")
                }
                return state.firstKept
            }
            var page = StoredPage(body: framing.emptyPage())
            for event in events where event.sequence >= max(from, firstKept) && event.sequence <= through && page.events < limit {
                page.first = page.first ?? event.sequence
                page.last = event.sequence
                page.events += 1
                "t".utf8.withContiguousStorageIfAvailable { time in
                    event.payload.withUnsafeBytes {
                        framing.append(
                            sequence: event.sequence, time: UnsafeRawBufferPointer(time), payload: $0, trace: nil, hash: nil, key: nil, to: &page.body)
                    }
                }
            }
            return page
        }
    }

    /// Frames an event as its sequence number.
    struct Sequences: LogFraming {
        func emptyPage() -> [UInt64] { [] }
        func append(
            sequence: UInt64, time: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer, trace: UnsafeRawBufferPointer?,
            hash: UnsafeRawBufferPointer?, key: UnsafeRawBufferPointer?, to page: inout [UInt64]
        ) {
            page.append(sequence)
        }
    }

    /// What one move gave, in a form tests compare.
    enum Seen: Equatable {
        case ring([UInt64])
        case stored([UInt64])
        case gap(ClosedRange<UInt64>)
        case caughtUp
        case ended(UInt64)
        case deleted
    }

    typealias Cursor = LogCursor<ArrayLog, Sequences>

    static func cursor(
        _ log: ArrayLog, hub: StreamHub = StreamHubTests.hub(), from next: UInt64 = 1, retry: CursorRetry = .instant(attempts: nil),
        readAhead: Bool = false
    ) -> Cursor {
        LogCursor(hub: hub, log: log, framing: Sequences(), from: next, liveAfter: 10, retry: retry, readAhead: readAhead)
    }

    static func moves(_ cursor: inout Cursor, _ count: Int, limit: Int = 3) async throws -> [Seen] {
        var seen: [Seen] = []
        for _ in 0..<count {
            switch try await cursor.move(limit: limit, byteBudget: 1 << 20) {
            case .ring(let entries): seen.append(.ring(entries.map(\.sequence)))
            case .stored(let page): seen.append(.stored(page.body))
            case .gap(let from, let through): seen.append(.gap(from...through))
            case .caughtUp: seen.append(.caughtUp)
            case .ended(_, let last): seen.append(.ended(last))
            case .deleted: seen.append(.deleted)
            }
        }
        return seen
    }

    @Test func oldEventsComeFromTheStoreRecentOnesFromTheRingThenItWaits() async throws {
        let log = ArrayLog()
        var cursor = Self.cursor(log)  // the ring holds 7...10
        let seen = try await Self.moves(&cursor, 5)
        #expect(seen == [.stored([1, 2, 3]), .stored([4, 5, 6]), .ring([7, 8, 9]), .ring([10]), .caughtUp])
        #expect(cursor.next == 11)
        #expect(log.reads == [1, 4])
    }

    @Test func aMoveFromMemoryNeverReadsTheStore() async throws {
        let log = ArrayLog()
        var cursor = Self.cursor(log)
        let behind = cursor.moveFromMemory(limit: 3, byteBudget: 1 << 20)
        #expect(behind == nil, "events 1...6 are only in the store")
        #expect(cursor.next == 1 && log.reads.isEmpty)
        _ = try await Self.moves(&cursor, 2)
        guard case .ring(let entries) = cursor.moveFromMemory(limit: 3, byteBudget: 1 << 20) else {
            Issue.record("expected events from the ring"); return
        }
        #expect(entries.map(\.sequence) == [7, 8, 9])
        #expect(log.reads == [1, 4])
    }

    @Test func readingAheadReadsEachPageOnce() async throws {
        let log = ArrayLog()
        var cursor = Self.cursor(log, readAhead: true)
        let seen = try await Self.moves(&cursor, 4, limit: 2)
        #expect(seen == [.stored([1, 2]), .stored([3, 4]), .stored([5, 6]), .ring([7, 8])])
        #expect(log.reads == [1, 3, 5], "the page after each is read while it is sent, and never again")
    }

    @Test func whatTheStoreTrimmedSinceTheHubListedItIsAGapBeforeThePage() async throws {
        var cursor = Self.cursor(ArrayLog(firstKept: 3))
        let seen = try await Self.moves(&cursor, 3)
        #expect(seen == [.gap(1...2), .stored([3, 4, 5]), .stored([6])])
    }

    @Test func aPageTheStoreNoLongerHoldsAtAllIsAGapOverItsRange() async throws {
        var cursor = Self.cursor(ArrayLog(firstKept: 9))
        let seen = try await Self.moves(&cursor, 2)
        #expect(seen == [.gap(1...6), .ring([7, 8, 9])])
    }

    @Test func historyTheHubKnowsIsTrimmedIsAGapWithoutReading() async throws {
        let log = ArrayLog()
        var cursor = Self.cursor(log, hub: StreamHubTests.hub(ring: 100, first: 5))
        let seen = try await Self.moves(&cursor, 2)
        #expect(seen == [.gap(1...4), .ring([5, 6, 7])])
        #expect(log.reads.isEmpty)
    }

    @Test func aStoreThatIsAwayIsWaitedForAtTheSamePosition() async throws {
        let log = ArrayLog(awayFor: 3)
        let waits = Locked<[Duration]>([])
        var cursor = Self.cursor(log, retry: .instant(attempts: nil, recording: waits))
        let seen = try await Self.moves(&cursor, 1)
        #expect(seen == [.stored([1, 2, 3])])
        #expect(log.reads == [1, 1, 1, 1])
        #expect(waits.withLock { $0 } == [.milliseconds(50), .milliseconds(100), .milliseconds(200)])
    }

    @Test func aBoundedRetryGivesUpWithTheStoresError() async throws {
        let log = ArrayLog(awayFor: 5)
        var cursor = Self.cursor(log, retry: .instant(attempts: 2))
        await #expect(throws: StoreError.self) { try await Self.moves(&cursor, 1) }
        #expect(log.reads == [1, 1, 1], "two waits, three attempts")
        #expect(cursor.next == 1, "the position did not move")
    }

    @Test func theStreamsEndAndItsDeletionEndTheCursor() async throws {
        let hub = StreamHubTests.hub(ring: 100)
        hub.apply(CommitBatch.Change(info: StreamHubTests.info(first: 1, last: 10, terminal: .completed), appended: []))
        var ended = Self.cursor(ArrayLog(), hub: hub, from: 9)
        #expect(try await Self.moves(&ended, 2) == [.ring([9, 10]), .ended(10)])

        hub.apply(CommitBatch.Change(info: nil, appended: []))
        var deleted = Self.cursor(ArrayLog(), hub: hub, from: 1)
        #expect(try await Self.moves(&deleted, 1) == [.deleted])
    }

    @Test func waitsDoubleUpToTheLongest() {
        let retry = CursorRetry(first: .milliseconds(50), longest: .seconds(2), attempts: 8)
        let delays = (0..<9).map { retry.delay(before: $0) }
        #expect(delays == [50, 100, 200, 400, 800, 1600, 2000, 2000].map { .milliseconds($0) } + [nil])
        #expect(CursorRetry.untilCancelled.delay(before: 1000) == .seconds(2))
    }
}

extension CursorRetry {
    /// A retry on no clock at all: each wait returns at once, and is recorded.
    static func instant(attempts: Int?, recording waits: Locked<[Duration]> = Locked([])) -> CursorRetry {
        CursorRetry(attempts: attempts, sleep: { delay in waits.withLock { $0.append(delay) } })
    }
}
