import Foundation
import GRDB
import ReplayCore
import ReplayModel
import ReplayStore
import ReplaySync
import ReplayTesting
import Testing

@Suite("EventStore")
struct EventStoreTests {
    @Test(arguments: StoreKind.allCases) func sequenceNumbersStartAtOneAndAreContiguousPerStream(_ kind: StoreKind) async throws {
        try await withStoreLocation(kind) { directory in
            let store = try openStore(directory, autoCreate: .unlimited)
            defer { store.close() }
            #expect(try await store.appendAll(["a", "b", "c"], to: "one") == [1, 2, 3])
            #expect(try await store.appendAll(["x"], to: "two") == [1])
            #expect(try await store.appendAll(["d"], to: "one") == [4])
            let info = try #require(store.info("one"))
            #expect(info.firstSequence == 1 && info.lastSequence == 4 && info.eventCount == 4 && info.byteCount == 4)
        }
    }

    @Test(arguments: StoreKind.allCases) func concurrentAppendersGetUniqueContiguousSequencesInOnePerStreamOrder(_ kind: StoreKind) async throws {
        try await withStoreLocation(kind) { directory in
            let store = try openStore(directory, durability: .normal, autoCreate: .unlimited)
            defer { store.close() }
            let sequences = try await withThrowingTaskGroup(of: [UInt64].self) { group in
                for producer in 0..<4 {
                    group.addTask {
                        try await store.appendAll((0..<250).map { "p\(producer)-\($0)" }, to: "shared")
                    }
                }
                var all: [UInt64] = []
                for try await part in group {
                    #expect(part == part.sorted(), "one producer's appends keep their order")
                    all += part
                }
                return all
            }
            #expect(sequences.sorted() == Array(1...1000))
        }
    }

    /// Appends that arrive while a transaction runs share the next one: far fewer commits
    /// than appends.
    @Test(arguments: StoreKind.allCases) func appendsAreGroupCommitted(_ kind: StoreKind) async throws {
        try await withStoreLocation(kind) { directory in
            let store = try openStore(directory, autoCreate: .unlimited)
            defer { store.close() }
            let commits = Locked(0)
            store.onCommit { _ in commits.withLock { $0 += 1 } }
            let total = 5_000
            try await withThrowingTaskGroup(of: Void.self) { group in
                for n in 0..<total {
                    group.addTask { _ = try await store.append(Data("\(n)".utf8), to: "burst") }
                }
                try await group.waitForAll()
            }
            #expect(store.info("burst")?.lastSequence == UInt64(total))
            #expect(commits.value < total / 10, "\(commits.value) commits for \(total) appends")
        }
    }

    @Test(arguments: StoreKind.allCases) func commitListenersHearOnlyCommittedEventsInOrder(_ kind: StoreKind) async throws {
        try await withStoreLocation(kind) { directory in
            let store = try openStore(directory, autoCreate: .init(capacity: 0))
            defer { store.close() }
            let heard = Locked<[UInt64]>([])
            store.onCommit { batch in
                heard.withLock { $0 += batch.changes["live"]?.appended.map(\.sequence) ?? [] }
            }
            _ = try await store.appendAll(["a", "b", "c"], to: "live")
            #expect(heard.value == [1, 2, 3], "capacity 0 keeps nothing but still numbers and announces events")
            #expect(try store.texts("live") == [])
        }
    }

    @Test(arguments: StoreKind.allCases) func terminalEventIsStoredAndRefusesLaterAppends(_ kind: StoreKind) async throws {
        try await withStoreLocation(kind) { directory in
            let store = try openStore(directory, autoCreate: .unlimited)
            defer { store.close() }
            _ = try await store.appendAll(["a"], to: "job")
            try await store.terminate("job", .failed(message: "exit status 3"))
            await #expect(throws: StoreError.terminated(stream: "job")) {
                _ = try await store.append(Data("b".utf8), to: "job")
            }
            await #expect(throws: StoreError.terminated(stream: "job")) {
                try await store.terminate("job", .completed)
            }
            let info = try #require(store.info("job"))
            #expect(info.terminal == .failed(message: "exit status 3"))
            #expect(info.terminalSequence == 2)

            // reset clears the terminal event; sequence numbers go on from the last event
            // (a terminal event is replayed after the last event, it uses no event number).
            try await store.reset("job", keepHistory: false)
            #expect(store.info("job")?.eventCount == 0)
            #expect(try await store.appendAll(["c"], to: "job") == [2])
            #expect(try store.texts("job") == ["c"])
        }
    }

    @Test(arguments: StoreKind.allCases) func createIsIdempotentForSameSettingsAndRefusesOthers(_ kind: StoreKind) async throws {
        try await withStoreLocation(kind) { directory in
            let store = try openStore(directory)
            defer { store.close() }
            let config = StreamConfig(
                capacity: 10, maxBytes: 1000, maxAge: 60,
                source: StreamSource(command: "date", connect: .lazy, options: try SourceOptions(json: #"{"framing":"lines"}"#)))
            let created = try await store.create("orders", config: config)
            #expect(created.config == config)
            #expect(try await store.create("orders", config: config) == created)
            await #expect(throws: StoreError.streamExists("orders")) {
                _ = try await store.create("orders", config: .unlimited)
            }
            await #expect(throws: StoreError.invalidStreamName("bad name")) {
                _ = try await store.create("bad name", config: .unlimited)
            }
            await #expect(throws: StoreError.invalidConfig("capacity must be 0 or more, or unlimited")) {
                _ = try await store.create("neg", config: StreamConfig(capacity: -1))
            }
            await #expect(throws: StoreError.unknownStream("nope")) {
                _ = try await store.append(Data(), to: "nope")
            }
            #expect(store.streams.map(\.name) == ["orders"])
        }
    }

    @Test(arguments: StoreKind.allCases) func deleteRemovesTheStreamAndItsEvents(_ kind: StoreKind) async throws {
        try await withStoreLocation(kind) { directory in
            let store = try openStore(directory, autoCreate: .unlimited)
            defer { store.close() }
            _ = try await store.appendAll(["a", "b"], to: "gone")
            try await store.delete("gone")
            #expect(store.info("gone") == nil)
            let rows = try await scalar(store, "SELECT count(*) FROM event_log")
            #expect(rows == 0)
            await #expect(throws: StoreError.unknownStream("gone")) { try await store.delete("gone") }
        }
    }

    @Test(arguments: StoreKind.allCases) func readsPagesRangesAndTimes(_ kind: StoreKind) async throws {
        try await withStoreLocation(kind) { directory in
            let now = Locked(Date(timeIntervalSince1970: 1_800_000_000))
            let store = try openStore(directory, autoCreate: .unlimited, clock: { now.value })
            defer { store.close() }
            for n in 1...10 {
                _ = try await store.append(Data("e\(n)".utf8), to: "s")
                now.withLock { $0 += 60 }
            }
            let page = try store.read("s", from: 4, through: 8, limit: 3)
            #expect(page.map(\.sequence) == [4, 5, 6])
            #expect(page[0].time == Date(timeIntervalSince1970: 1_800_000_000 + 180))
            #expect(try store.read("s", from: 9, limit: 100).map(\.sequence) == [9, 10])
            #expect(try store.read("s", from: 11).isEmpty)
            #expect(try store.readLast("s", count: 3).map(\.sequence) == [8, 9, 10])
            #expect(try store.readLast("s", count: 50).count == 10)
            #expect(try store.firstSequence("s", since: Date(timeIntervalSince1970: 1_800_000_000 + 299)) == 6)
            #expect(try store.firstSequence("s", since: Date(timeIntervalSince1970: 1_900_000_000)) == 11)
            #expect(throws: StoreError.unknownStream("x")) { try store.read("x", from: 1) }
        }
    }

    @Test(arguments: StoreKind.allCases) func binaryPayloadsComeBackByteForByte(_ kind: StoreKind) async throws {
        try await withStoreLocation(kind) { directory in
            let store = try openStore(directory, autoCreate: .unlimited)
            defer { store.close() }
            let bytes = Data((0...255).map(UInt8.init) + [0, 0, 10, 13])
            _ = try await store.append(bytes, to: "bin")
            _ = try await store.append(Data(), to: "bin")
            #expect(try store.read("bin", from: 1).map(\.payload) == [bytes, Data()])
        }
    }
}
