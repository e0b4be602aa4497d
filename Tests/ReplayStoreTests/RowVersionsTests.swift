import Foundation
import Testing

@testable import ReplayStore

/// Which streams a PostgreSQL batch may write on the rows as the daemon last saw them
/// (`RowVersions`): the rest take the locks from the start. Time is given, not read.
@Suite("PostgreSQL row versions")
struct RowVersionsTests {
    let start = ContinuousClock.now

    func record(id: Int64 = 7, _ config: StreamConfig = .unlimited, events: UInt64 = 10) -> Catalog.Record {
        Catalog.Record(
            id: id,
            info: StreamInfo(
                name: "s\(id)", config: config, createdAt: Date(timeIntervalSince1970: 0), firstSequence: 1, lastSequence: events,
                byteCount: 0, terminal: nil, terminalAt: nil, fork: nil))
    }

    @Test func aRowIsWrittenOnTheVersionLastSeenUntilItIsForgotten() {
        var versions = RowVersions()
        #expect(versions.version(for: record(), at: start) == nil, "a row never read takes the locks")
        versions.learn([7: 1234])
        #expect(versions.version(for: record(), at: start) == 1234)
        versions.learn([7: 1240, 8: 99])
        #expect(versions.version(for: record(), at: start) == 1240, "the newest version read or written")
        versions.forget([7])
        #expect(versions.version(for: record(), at: start) == nil)
        #expect(versions.version(for: record(id: 8), at: start) == 99)
    }

    @Test func aRowAnotherDaemonWroteTakesTheLocksForAWhile() {
        var versions = RowVersions()
        versions.contended([7], at: start)
        versions.learn([7: 1234])
        #expect(versions.version(for: record(), at: start + .milliseconds(999)) == nil)
        #expect(versions.version(for: record(), at: start + RowVersions.contentionWindow) == 1234)
    }

    @Test func streamsWhoseAppendsReadOrChangeMoreThanTheirRowTakeTheLocks() {
        var versions = RowVersions()
        versions.learn([7: 1])
        #expect(versions.version(for: record(StreamConfig(capacity: 11), events: 10), at: start) == 1, "below its capacity")
        #expect(versions.version(for: record(StreamConfig(capacity: 10), events: 10), at: start) == nil, "at it: every append removes one")
        #expect(versions.version(for: record(StreamConfig(capacity: nil, maxBytes: 1 << 20)), at: start) == nil)
        #expect(versions.version(for: record(StreamConfig(capacity: nil, maxAge: 60)), at: start) == nil)
        #expect(versions.version(for: record(StreamConfig(capacity: nil, keepUnacked: 100)), at: start) == nil)
        var grouped = record()
        grouped.groups["g"] = ConsumerGroup(
            name: "g", settings: GroupSettings(ackWaitMillis: 30_000, maxDeliver: nil, deadLetter: nil), deliveredSequence: 0, createdAt: 0)
        #expect(versions.version(for: grouped, at: start) == nil)
    }
}
