import Foundation
import GRDB
import ReplayStore
import ReplayTesting
import Testing

/// Catch-up reads events straight from SQLite's buffers (`forEachEvent`), and the writer
/// binds payloads in place: the bytes must come back exactly, empty ones included.
@Suite("EventStore page reads")
struct PageReadTests {
    @Test(arguments: StoreKind.allCases) func payloadsComeBackByteForByteIncludingEmptyAndBinaryOnes(_ kind: StoreKind) async throws {
        try await withStoreLocation(kind) { directory in
            let store = try openStore(directory, autoCreate: .unlimited)
            defer { store.close() }
            let payloads = [Data(), Data([0, 13, 10, 255]), Data(repeating: 0x61, count: 70_000), Data("{\"id\":1}".utf8)]
            for payload in payloads { _ = try await store.append(payload, to: "s") }
            var seen: [(UInt64, String, Data)] = []
            try store.forEachEvent(in: "s", from: 1) { sequence, time, payload, _, _, _ in
                seen.append((sequence, String(decoding: time, as: UTF8.self), Data(payload)))
            }
            #expect(seen.map(\.0) == [1, 2, 3, 4])
            #expect(seen.map(\.2) == payloads)
            #expect(seen.allSatisfy { $0.1.hasSuffix("Z") && $0.1.count == 24 })
            // An empty payload is stored as an empty blob, not NULL, for the sqlite3 and psql shells.
            let empty = kind == .sqlite ? "typeof(payload) = 'blob' AND length(payload) = 0" : "payload = ''::bytea"
            #expect(try await scalar(store, "SELECT count(*) FROM events WHERE seq = 1 AND \(empty)") == 1)
        }
    }

    @Test(arguments: StoreKind.allCases) func aPageStopsAtItsLimitOrAfterTheEventThatReachesTheByteBudget(_ kind: StoreKind) async throws {
        try await withStoreLocation(kind) { directory in
            let store = try openStore(directory, autoCreate: .unlimited)
            defer { store.close() }
            for _ in 0..<10 { _ = try await store.append(Data(repeating: 1, count: 100), to: "s") }
            func page(from: UInt64, through: UInt64 = .max, limit: Int = 512, budget: Int = .max) throws -> [UInt64] {
                var sequences: [UInt64] = []
                try store.forEachEvent(in: "s", from: from, through: through, limit: limit, byteBudget: budget) { sequence, _, _, _, _, _ in
                    sequences.append(sequence)
                }
                return sequences
            }
            #expect(try page(from: 3, limit: 4) == [3, 4, 5, 6])
            #expect(try page(from: 3, budget: 250) == [3, 4, 5])
            #expect(try page(from: 8, through: 9) == [8, 9])
            #expect(try page(from: 11).isEmpty)
            #expect(throws: StoreError.self) { try store.forEachEvent(in: "nope", from: 1) { _, _, _, _, _, _ in } }
        }
    }

    /// PostgreSQL bounds most pages by asking only for events short enough that the page
    /// cannot pass the read's bytes, and a page that meets a longer one ends before it
    /// (`PostgresTransaction.smallEventsPage`). Long events first in a page, within it, one
    /// after another and last must each come once, in order, and the byte budget must still
    /// end the read at the event that reaches it.
    @Test(arguments: StoreKind.allCases) func longEventsAmongShortOnesComeOnceInOrderWithinTheByteBudget(_ kind: StoreKind) async throws {
        try await withStoreLocation(kind) { directory in
            let store = try openStore(directory, autoCreate: .unlimited)
            defer { store.close() }
            let long: Set<Int> = [1, 700, 701, 2_500, 5_000]
            func payload(_ n: Int) -> Data { Data(repeating: UInt8(n % 251), count: long.contains(n) ? 20_000 + n : 20) }
            for n in 1..<5_000 { store.append(payload(n), to: "s") { _ in } }
            #expect(try await store.append(payload(5_000), to: "s").sequence == 5_000)

            func read(from: UInt64, limit: Int, budget: Int) throws -> [(UInt64, Data)] {
                var seen: [(UInt64, Data)] = []
                try store.forEachEvent(in: "s", from: from, limit: limit, byteBudget: budget) { sequence, _, bytes, _, _, _ in
                    seen.append((sequence, Data(bytes)))
                }
                return seen
            }
            func expected(from: Int, limit: Int, budget: Int) -> [Int] {
                var (events, bytes) = ([Int](), 0)
                for n in from...5_000 where bytes < budget && events.count < limit {
                    events.append(n)
                    bytes += payload(n).count
                }
                return events
            }
            // Pages of up to 4,096 rows: with 1 MiB, events over 256 bytes are long; with 100
            // rows and 30,000 bytes, those over 300; with 10,000 bytes, every event.
            let reads = [
                (1, 10_000, 1 << 20), (2, 10_000, 1 << 20), (702, 10_000, 1 << 20), (4_000, 10_000, 1 << 20),
                (650, 100, 30_000), (690, 100, 30_000), (650, 100, 10_000), (2_400, 100, 1 << 20),
            ]
            for (from, limit, budget) in reads {
                let seen = try read(from: UInt64(from), limit: limit, budget: budget)
                #expect(seen.map { Int($0.0) } == expected(from: from, limit: limit, budget: budget), "from \(from), limit \(limit), budget \(budget)")
                #expect(seen.allSatisfy { $0.1 == payload(Int($0.0)) })
            }
        }
    }

    /// PostgreSQL answers a read in pages of sequence ranges (`PostgresTransaction+Reads`):
    /// a read longer than a page, starting where retention has removed the events, must
    /// find the first retained one and then go on page after page without losing or
    /// repeating one, whatever the payloads' sizes.
    @Test(arguments: StoreKind.allCases) func aLongReadFromBelowTheFirstRetainedEventGivesEachRetainedEventOnceInOrder(_ kind: StoreKind) async throws {
        try await withStoreLocation(kind) { directory in
            let store = try openStore(directory)
            defer { store.close() }
            _ = try await store.create("s", config: StreamConfig(capacity: 6_000))
            func payload(_ n: Int) -> Data { Data(repeating: UInt8(n % 251), count: n * 37 % 301) }
            for n in 1..<7_000 { store.append(payload(n), to: "s") { _ in } }
            #expect(try await store.append(payload(7_000), to: "s").sequence == 7_000)
            var seen: [(UInt64, Data)] = []
            try store.forEachEvent(in: "s", from: 1, limit: 10_000) { sequence, _, bytes, _, _, _ in seen.append((sequence, Data(bytes))) }
            #expect(seen.count == 6_000)
            #expect(seen.first?.0 == 1_001 && seen.last?.0 == 7_000)
            #expect(zip(seen, UInt64(1_001)...).allSatisfy { event, expected in event.0 == expected && event.1 == payload(Int(expected)) })

            // A byte budget ends the read at the event that reaches it, pages or not.
            let budget = 200_000
            var (read, bytes) = (0, 0)
            for n in 1_001...7_000 where bytes < budget {
                read += 1
                bytes += payload(n).count
            }
            var sequences: [UInt64] = []
            try store.forEachEvent(in: "s", from: 1, limit: 10_000, byteBudget: budget) { sequence, _, _, _, _, _ in sequences.append(sequence) }
            #expect(sequences.count == read)
            #expect(sequences.first == 1_001 && sequences.last == UInt64(1_000 + read))
        }
    }
}
