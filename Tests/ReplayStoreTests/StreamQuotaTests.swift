import Foundation
import ReplayModel
import ReplayTesting
import Testing

@testable import ReplayStore

/// The cap on the streams one creator (a scoped token) may have: counted in the writer's
/// transaction over the rows it made that still exist, on both stores.
@Suite("A creator's cap on its streams")
struct StreamQuotaTests {
    static func create(_ store: EventStore, _ name: String, by creator: String, limit: Int?) async -> Result<StreamWriteOutcome, StoreError> {
        var write = StreamWrite(stream: name, payloads: [], create: StreamConfig(capacity: nil))
        write.creator = StreamCreator(name: creator, limit: limit)
        do { return .success(try await store.write(write)) } catch { return .failure(error) }
    }

    @Test(arguments: StoreKind.allCases) func creationsAtOnceCannotPassTheCapAndItHoldsAcrossARestart(_ kind: StoreKind) async throws {
        try await withStoreLocation(kind) { location in
            do {
                let store = try openStore(location)
                defer { store.close() }
                // Five at once, most of them in one batch: exactly two are made.
                let outcomes = await withTaskGroup(of: Result<StreamWriteOutcome, StoreError>.self) { group in
                    for n in 0..<5 { group.addTask { await Self.create(store, "t/\(n)", by: "alice", limit: 2) } }
                    return await group.reduce(into: []) { $0.append($1) }
                }
                let made = outcomes.filter { if case .success(.created) = $0 { true } else { false } }
                #expect(made.count == 2)
                for outcome in outcomes {
                    if case .failure(let error) = outcome {
                        #expect(error == .quotaExceeded("'alice' has created 2 streams, as many as it may; delete one first"))
                    }
                }
                // Another creator, and streams made without one, are not counted.
                guard case .success(.created) = await Self.create(store, "u/1", by: "bob", limit: 1) else { throw TestFailure("bob was refused") }
                _ = try await store.create("plain", config: StreamConfig(capacity: nil))
            }
            let store = try openStore(location)
            defer { store.close() }
            #expect(try await scalar(store, "SELECT count(*) FROM streams WHERE created_by = 'alice'") == 2)
            #expect(try await scalar(store, "SELECT count(*) FROM streams WHERE created_by IS NULL") == 1)
            guard case .failure(.quotaExceeded) = await Self.create(store, "t/9", by: "alice", limit: 2) else {
                throw TestFailure("the cap was forgotten at the restart")
            }
            let name = try #require(store.streams.first { $0.name.hasPrefix("t/") }?.name)
            try await store.delete(name)
            guard case .success(.created) = await Self.create(store, "t/9", by: "alice", limit: 2) else {
                throw TestFailure("deleting one of its streams did not make room")
            }
        }
    }

    @Test func twoStoresOnOnePostgreSQLDatabaseCannotPassTheCapTogether() async throws {
        try await TestPostgres.withDatabase { url in
            let first = try EventStore(location: url, options: .init())
            let second = try EventStore(location: url, options: .init())
            defer {
                first.close()
                second.close()
            }
            // Ten creations at once, five through each store (two daemons' writers): three made.
            let outcomes = await withTaskGroup(of: Result<StreamWriteOutcome, StoreError>.self) { group in
                for n in 0..<10 {
                    group.addTask { await Self.create(n.isMultiple(of: 2) ? first : second, "t/\(n)", by: "alice", limit: 3) }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            let made = outcomes.filter { if case .success(.created) = $0 { true } else { false } }
            #expect(made.count == 3)
            #expect(try await scalar(first, "SELECT count(*) FROM streams WHERE created_by = 'alice'") == 3)
        }
    }
}
