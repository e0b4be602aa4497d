import Foundation
import ReplayProtocol
import ReplaySync
import Testing

@testable import ReplayServer
@testable import ReplayStore

/// The hub's cursor logic, without a daemon: what a subscription at each position does,
/// and that a parked cursor is woken by every kind of change.
@Suite("StreamHub")
struct StreamHubTests {
    static func info(first: UInt64, last: UInt64, terminal: Terminal? = nil) -> StreamInfo {
        StreamInfo(
            name: "s", config: StreamConfig(capacity: nil), createdAt: Date(timeIntervalSince1970: 0),
            firstSequence: first, lastSequence: last, byteCount: 0, terminal: terminal, terminalAt: nil)
    }

    static func events(_ range: ClosedRange<UInt64>) -> [StoredEvent] {
        range.map { StoredEvent(sequence: $0, timestamp: "2026-11-23T00:00:00.000Z", payload: Data("e\($0)".utf8)) }
    }

    /// A hub holding events 1...10 in the store, of which the ring keeps the last `ring`.
    static func hub(ring: Int = 4, first: UInt64 = 1) -> StreamHub {
        let hub = StreamHub(info: info(first: first, last: 0), tailEvents: ring, tailBytes: 1 << 20)
        hub.apply(CommitBatch.Change(info: info(first: first, last: 10), appended: events(1...10)))
        return hub
    }

    func sequences(_ step: StreamHub.Step) -> [UInt64]? {
        if case .send(let entries) = step { return entries.map(\.sequence) }
        return nil
    }

    @Test func aCursorInTheRingIsServedFromMemory() {
        let hub = Self.hub()
        #expect(sequences(hub.step(at: 7, liveAfter: 10, limit: 100, byteBudget: 1 << 20)) == [7, 8, 9, 10])
        #expect(sequences(hub.step(at: 9, liveAfter: 10, limit: 1, byteBudget: 1 << 20)) == [9])
    }

    @Test func aCursorBehindTheRingReadsTheStoreUpToTheRing() {
        guard case .read(let through) = Self.hub().step(at: 2, liveAfter: 10, limit: 100, byteBudget: 1 << 20) else {
            Issue.record("expected a read"); return
        }
        #expect(through == 6)
    }

    @Test func historyRetentionRemovedIsAGapButLiveEventsAreNot() {
        let hub = Self.hub(ring: 100, first: 5)
        guard case .gap(let through) = hub.step(at: 1, liveAfter: 10, limit: 100, byteBudget: 1 << 20) else {
            Issue.record("expected a gap for trimmed history"); return
        }
        #expect(through == 4)
        // Events after liveAfter are live: delivered from the ring whatever the window.
        #expect(sequences(hub.step(at: 3, liveAfter: 2, limit: 100, byteBudget: 1 << 20)) == Array(3...10))
    }

    @Test func eventsRemovedFromInsideTheWindowAreNeverServedFromTheRing() {
        let hub = Self.hub(ring: 100)
        var removed = Self.info(first: 1, last: 10)
        removed.removedEvents = 2
        removed.removedThrough = 6
        hub.apply(CommitBatch.Change(info: removed, appended: []))
        // 5 and 6 went (a hole the store's read ends at): the ring serves from 7 only.
        guard case .read(let through) = hub.step(at: 5, liveAfter: 10, limit: 100, byteBudget: 1 << 20) else {
            Issue.record("expected a read of the store"); return
        }
        #expect(through == 6)
        #expect(sequences(hub.step(at: 7, liveAfter: 10, limit: 100, byteBudget: 1 << 20)) == [7, 8, 9, 10])
    }

    @Test func anExpiredEventInTheRingIsReadFromTheStoreAsTheGapItIs() {
        let now = Locked<Int64>(1_000)
        let hub = StreamHub(info: Self.info(first: 1, last: 0), tailEvents: 100, tailBytes: 1 << 20, clock: { now.value })
        let events = (1...6).map { sequence in
            StoredEvent(
                sequence: UInt64(sequence), timestamp: "2026-11-23T00:00:00.000Z", payload: Data("e\(sequence)".utf8),
                expiresAt: [3, 4].contains(sequence) ? 2_000 : nil)
        }
        hub.apply(CommitBatch.Change(info: Self.info(first: 1, last: 6), appended: events))
        #expect(sequences(hub.step(at: 1, liveAfter: 6, limit: 100, byteBudget: 1 << 20)) == [1, 2, 3, 4, 5, 6])
        now.withLock { $0 = 2_000 }
        #expect(sequences(hub.step(at: 1, liveAfter: 6, limit: 100, byteBudget: 1 << 20)) == [1, 2], "a slice ends before an expired event")
        guard case .read(let through) = hub.step(at: 3, liveAfter: 6, limit: 100, byteBudget: 1 << 20) else {
            Issue.record("expected a read of the store"); return
        }
        #expect(through == 4, "both expired events, for the store to show as one gap")
        #expect(sequences(hub.step(at: 5, liveAfter: 6, limit: 100, byteBudget: 1 << 20)) == [5, 6])
    }

    @Test func caughtUpWaitsAndATerminalStreamEnds() {
        let hub = Self.hub()
        guard case .wait = hub.step(at: 11, liveAfter: 10, limit: 100, byteBudget: 1 << 20) else {
            Issue.record("expected to wait"); return
        }
        hub.apply(CommitBatch.Change(info: Self.info(first: 1, last: 10, terminal: .completed), appended: []))
        guard case .end(.completed, let last) = hub.step(at: 11, liveAfter: 10, limit: 100, byteBudget: 1 << 20) else {
            Issue.record("expected the end"); return
        }
        #expect(last == 10)
        hub.apply(CommitBatch.Change(info: nil, appended: []))
        guard case .deleted = hub.step(at: 11, liveAfter: 10, limit: 100, byteBudget: 1 << 20) else {
            Issue.record("expected deleted"); return
        }
    }

    @Test func startPositions() {
        let hub = Self.hub(first: 3)
        #expect(hub.start(.all) == StartPoint(next: 3, liveAfter: 10))
        #expect(hub.start(.new) == StartPoint(next: 11, liveAfter: 10))
        #expect(hub.start(.from(0)) == StartPoint(next: 1, liveAfter: 10))
        #expect(hub.start(.last(2)) == StartPoint(next: 9, liveAfter: 10))
        #expect(hub.start(.last(100)) == StartPoint(next: 3, liveAfter: 10))
        #expect(hub.start(.last(0)) == StartPoint(next: 11, liveAfter: 10))
        #expect(hub.start(.since(0)) == nil)
    }

    /// A cursor parked after the last sequence is woken by the next commit, whichever runs
    /// first: the commit before the cursor parks (it must not park), or after.
    @Test(arguments: 0..<200)
    func aParkedCursorIsNeverLeftBehindByACommit(round: Int) async {
        let hub = Self.hub()
        async let parked: Void = hub.waitForCommit(after: 10)
        if round.isMultiple(of: 2) { await Task.yield() }
        hub.apply(CommitBatch.Change(info: Self.info(first: 1, last: 11), appended: Self.events(11...11)))
        await parked
        #expect(sequences(hub.step(at: 11, liveAfter: 10, limit: 100, byteBudget: 1 << 20)) == [11])
    }

    /// A payload from `sharingFrom` bytes on is handed to every subscriber as one buffer:
    /// the same storage, made once, whoever asks first.
    @Test func largePayloadsAreSharedBetweenSubscribers() {
        let hub = StreamHub(info: Self.info(first: 1, last: 0), tailEvents: 10, tailBytes: 1 << 20)
        let big = StoredEvent(sequence: 1, timestamp: "2026-11-23T00:00:00.000Z", payload: Data(repeating: 7, count: 4096))
        let small = StoredEvent(sequence: 2, timestamp: "2026-11-23T00:00:00.000Z", payload: Data("tiny".utf8))
        hub.apply(CommitBatch.Change(info: Self.info(first: 1, last: 2), appended: [big, small]))
        func entries() -> [TailRing.Entry] {
            guard case .send(let entries) = hub.step(at: 1, liveAfter: 0, limit: 10, byteBudget: 1 << 20, sharingFrom: 512) else { return [] }
            return entries
        }
        let (first, second) = (entries(), entries())
        #expect(first.count == 2 && second.count == 2)
        let addresses = [first[0], second[0]].map { $0.shared?.withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) } }
        #expect(addresses[0] != nil && addresses[0] == addresses[1], "both subscribers hold the same payload buffer")
        #expect(first[0].shared.map { Data($0.readableBytesView) } == big.payload)
        #expect(first[1].shared == nil, "a small payload is copied into each subscriber's buffer instead")
    }

    @Test func aParkedCursorIsWokenByCancellation() async {
        let hub = Self.hub()
        let task = Task { await hub.waitForCommit(after: 10) }
        task.cancel()
        await task.value
        #expect(hub.stateDescription.hasSuffix("parked after []"))
    }
}

@Suite("TailRing")
struct TailRingTests {
    @Test func keepsTheNewestWithinCountAndBytes() {
        var ring = TailRing(maxEvents: 3, maxBytes: 1 << 20)
        for event in StreamHubTests.events(1...5) { ring.append(event) }
        #expect(ring.firstSequence == 3)
        #expect(ring.slice(from: 1, limit: 10, byteBudget: 1 << 20).isEmpty)
        #expect(ring.slice(from: 4, limit: 10, byteBudget: 1 << 20).map(\.sequence) == [4, 5])

        var small = TailRing(maxEvents: 100, maxBytes: 5)  // "eN" is 2 bytes: two fit, a third not
        for event in StreamHubTests.events(1...4) { small.append(event) }
        #expect(small.firstSequence == 3)
    }

    @Test func aSliceStopsAtItsLimitAndBudgetButNeverReturnsNothing() {
        var ring = TailRing(maxEvents: 100, maxBytes: 1 << 20)
        for event in StreamHubTests.events(1...9) { ring.append(event) }
        #expect(ring.slice(from: 1, limit: 2, byteBudget: 1 << 20).map(\.sequence) == [1, 2])
        #expect(ring.slice(from: 1, limit: 100, byteBudget: 3).map(\.sequence) == [1, 2])
        #expect(ring.slice(from: 1, limit: 100, byteBudget: 0).map(\.sequence) == [1])
    }

    @Test func aHoleStartsTheRingOver() {
        var ring = TailRing(maxEvents: 100, maxBytes: 1 << 20)
        for event in StreamHubTests.events(1...3) + StreamHubTests.events(7...8) { ring.append(event) }
        #expect(ring.firstSequence == 7)
    }
}
