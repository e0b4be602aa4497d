import Foundation
import ReplayModel
import ReplaySync
import ReplayTesting
import Testing

@testable import ReplayStore

/// What a daemon tells the others sharing its PostgreSQL database after a commit.
@Suite("PostgreSQL store: commit notices")
struct PostgresNoticeTests {
    /// A batch that refreshes a stream (another daemon's notice) and then appends to it
    /// (a publish that arrived with the notice) must still announce its append: the other
    /// daemons would otherwise never learn of the new events. Seen as a two-daemon test
    /// waiting forever on the last 20 of 800 events.
    @Test func aBatchThatRefreshesAStreamAndWritesItAnnouncesTheWrite() async throws {
        try await TestPostgres.withDatabase { url in
            let other = try EventStore(location: url, options: .init(autoCreate: .unlimited))
            defer { other.close() }
            _ = try await other.append(Data("first".utf8), to: "shared")
            // A writer of its own, committing one chosen batch at a time (no LISTEN session,
            // so no other batch runs beside it).
            let location = try #require(PostgresLocation(url))
            let writer = try PostgresLog(location, options: .init(), listeners: CommitListeners(), now: Date.init)
            let appended = Locked<Result<StoredEvent, StoreError>?>(nil)
            await commit(
                writer,
                [
                    .refresh(streams: ["shared"]),
                    .appendWithCompletion(stream: "shared", payload: Data("second".utf8)) { result in appended.withLock { $0 = result } },
                ])
            #expect(try appended.withLock { $0 }?.get().sequence == 2)
            let deadline = ContinuousClock.now + .seconds(20)
            while other.info("shared")?.lastSequence != 2, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(other.info("shared")?.lastSequence == 2, "the other store heard of the append")
            writer.close()
        }
    }

    /// Another daemon's new events are read back (for the hubs' tail rings) only for a
    /// stream someone here reads live; a stream no one here reads is learned from its row
    /// alone, so that each daemon does not read back everything every other one writes.
    @Test func anotherDaemonsEventsAreReadBackOnlyForStreamsReadHere() async throws {
        try await TestPostgres.withDatabase { url in
            let other = try EventStore(location: url, options: .init(autoCreate: .unlimited))
            defer { other.close() }
            _ = try await other.append(Data("first".utf8), to: "watched")
            _ = try await other.append(Data("first".utf8), to: "unwatched")
            // A writer of its own (see above), started before the next events are appended.
            let listeners = CommitListeners()
            listeners.setLiveReaders { $0 == "watched" }
            let heard = Locked<[String: CommitBatch.Change]>([:])
            listeners.add { batch in heard.withLock { $0.merge(batch.changes) { $1 } } }
            let writer = try PostgresLog(try #require(PostgresLocation(url)), options: .init(), listeners: listeners, now: Date.init)
            defer { writer.close() }
            _ = try await other.append(Data("second".utf8), to: "watched")
            _ = try await other.append(Data("second".utf8), to: "unwatched")
            await commit(writer, [.refresh(streams: ["watched", "unwatched"])])
            let changes = heard.value
            #expect(changes["watched"]?.info?.lastSequence == 2)
            #expect(changes["watched"]?.appended.map { String(decoding: $0.payload, as: UTF8.self) } == ["second"])
            #expect(changes["unwatched"]?.info?.lastSequence == 2, "its row is read: the catalog learns it")
            #expect(changes["unwatched"]?.appended.isEmpty == true, "its events are not read back")
        }
    }
    /// The notice's payload: names, then bounds lines; a daemon of the previous version's
    /// payload (names only) reads every row; a bounds line this version cannot read, or
    /// one for a stream not listed, is left out; bounds that would pass NOTIFY's size are
    /// dropped, the names kept.
    @Test func aNoticeCarriesBoundsBesideTheNamesAndReadsTheOldFormat() throws {
        let head = try #require(EventHash(hex: String(repeating: "ab", count: 32)))
        let base = try #require(EventHash(hex: String(repeating: "0c", count: 32)))
        let bounds = StreamBounds(
            id: 7, firstSequence: 3, lastSequence: 40, byteCount: 3_800, lastTime: 1_764_000_000_000, chainHead: head, chainBase: base)
        let notice = CommitNotice(origin: "daemon-a", streams: ["orders", "audit"], bounds: ["orders": bounds])
        #expect(notice.payload == "daemon-a\naudit\norders\norders 7 3 40 3800 1764000000000 \(head.hex) \(base.hex)")
        let parsed = try #require(CommitNotice(payload: notice.payload))
        #expect(parsed == notice)
        #expect(parsed.streamsToRead == ["audit"])

        let old = try #require(CommitNotice(payload: "daemon-a\naudit\norders"))
        #expect(old.bounds.isEmpty && old.streamsToRead == ["audit", "orders"])
        let odd = try #require(
            CommitNotice(payload: "daemon-a\norders\norders 7 3 forty 3800 1 \(head.hex) \(base.hex)\naudit 1 1 1 1 1 \(head.hex) \(base.hex)"))
        let previousVersion = try #require(CommitNotice(payload: "daemon-a\norders\norders 7 3 40 3800 1"))
        #expect(previousVersion.streamsToRead == ["orders"], "a bounds line without the chain is read from the row")
        #expect(odd.bounds.isEmpty && odd.streamsToRead == ["orders"])

        let many = (0..<300).map { "stream-\($0)" }
        let crowded = CommitNotice(origin: "a", streams: many, bounds: Dictionary(uniqueKeysWithValues: many.map { ($0, bounds) }))
        #expect(crowded.streams == many.sorted() && crowded.bounds.isEmpty)
        #expect(crowded.payload.utf8.count < 8000)
        let three = CommitNotice(origin: "a", streams: many.prefix(3), bounds: Dictionary(uniqueKeysWithValues: many.prefix(3).map { ($0, bounds) }))
        #expect(three.bounds.count == 3, "a few streams' bounds fit")
    }

    /// A daemon knows its own notices by their first line, without reading the rest: a
    /// longer or shorter origin that shares the start is another daemon's.
    @Test func aDaemonKnowsItsOwnNoticeByItsFirstLine() {
        let payload = CommitNotice(origin: "daemon-a", streams: ["orders"]).payload
        #expect(CommitNotice.isOwn(payload, origin: "daemon-a"))
        #expect(CommitNotice.isOwn("daemon-a", origin: "daemon-a"))
        #expect(!CommitNotice.isOwn(payload, origin: "daemon"))
        #expect(!CommitNotice.isOwn(payload, origin: "daemon-ab"))
        #expect(!CommitNotice.isOwn("daemon-ab\norders", origin: "daemon-a"))
        #expect(!CommitNotice.isOwn("", origin: "daemon-a"))
    }

    /// Bounds are sent only for a commit that changed nothing else the other catalogs
    /// hold, and taken only when they are not behind what this daemon knows.
    @Test func boundsAreSentForAppendsAloneAndTakenOnlyWhenNotBehind() {
        let info = StreamInfo(
            name: "s", config: .unlimited, createdAt: Date(timeIntervalSince1970: 0), firstSequence: 1, lastSequence: 10,
            byteCount: 100, terminal: nil, terminalAt: nil, fork: nil)
        let before = Catalog.Record(id: 4, info: info, lastTime: 50)
        var appended = before
        appended.info.lastSequence = 12
        appended.info.byteCount = 120
        appended.lastTime = 60
        let bounds = StreamBounds.onlyChange(from: before, to: appended)
        #expect(bounds == StreamBounds(id: 4, firstSequence: 1, lastSequence: 12, byteCount: 120, lastTime: 60, chainHead: .zero, chainBase: .zero))
        #expect(bounds?.applied(to: before)?.info == appended.info)

        var closed = appended
        closed.info.terminal = .completed
        #expect(StreamBounds.onlyChange(from: before, to: closed) == nil, "a close is read")
        var labelled = appended
        labelled.info.writerSequence = "b"
        #expect(StreamBounds.onlyChange(from: before, to: labelled) == nil)
        #expect(StreamBounds.onlyChange(from: nil, to: appended) == nil, "a new stream is read")
        #expect(StreamBounds.onlyChange(from: Catalog.Record(id: 5, info: info), to: appended) == nil, "a stream made again is read")
        var consumed = appended
        consumed.consumers["c"] = ConsumerInfo(
            name: "c", ackedSequence: 1, createdAt: Date(timeIntervalSince1970: 0), updatedAt: Date(timeIntervalSince1970: 0))
        #expect(StreamBounds.onlyChange(from: before, to: consumed) == nil)

        #expect(bounds?.applied(to: appended) != nil, "the same state again")
        var later = appended
        later.info.lastSequence = 13
        #expect(bounds?.applied(to: later) == nil, "behind what is known")
    }

    /// A refresh with bounds tells the catalog and the hubs without reading the row (here
    /// the bounds are not the row's, to show which was taken); bounds behind the catalog
    /// make it read the row.
    @Test func boundsFromANoticeAreTakenWithoutReadingTheRow() async throws {
        try await TestPostgres.withDatabase { url in
            let other = try EventStore(location: url, options: .init(autoCreate: .unlimited))
            defer { other.close() }
            for payload in ["a", "b"] { _ = try await other.append(Data(payload.utf8), to: "s") }
            let listeners = CommitListeners()
            let heard = Locked<[String: CommitBatch.Change]>([:])
            listeners.add { batch in heard.withLock { $0.merge(batch.changes) { $1 } } }
            let writer = try PostgresLog(try #require(PostgresLocation(url)), options: .init(), listeners: listeners, now: Date.init)
            defer { writer.close() }
            let id64 = try #require(writer.catalog["s"]?.id)
            await commit(
                writer,
                [
                    .refresh(
                        streams: [],
                        bounds: ["s": StreamBounds(id: id64, firstSequence: 1, lastSequence: 5, byteCount: 5, lastTime: 9, chainHead: .zero, chainBase: .zero)])
                ])
            #expect(heard.value["s"]?.info?.lastSequence == 5, "taken as told")
            #expect(writer.catalog["s"]?.info.byteCount == 5)
            await commit(
                writer,
                [
                    .refresh(
                        streams: [],
                        bounds: ["s": StreamBounds(id: id64, firstSequence: 1, lastSequence: 4, byteCount: 4, lastTime: 9, chainHead: .zero, chainBase: .zero)])
                ])
            #expect(heard.value["s"]?.info?.lastSequence == 2, "behind: the row is read")
        }
    }
}

/// Commits `batch` on `writer`, on a thread of its own as the daemon's writer does: the
/// commit blocks its thread while postgres-nio answers, and part of that (a prepared
/// statement's run) needs the cooperative pool, which two tests blocking both of its
/// threads would leave with none (each commit then waited out PostgreSQL's 30 s).
private func commit(_ writer: PostgresLog, _ batch: [WriteRequest]) async {
    await blockingCall { writer.commit(batch) }
}
