import Foundation
import ReplayTesting
import Testing

@testable import ReplayStore

/// What only the PostgreSQL store has: its schema's refusals, its shell view, its URLs.
/// Everything the two stores share runs in the conformance tests (`StoreKind`).
@Suite("PostgreSQL store")
struct PostgresStoreTests {
    @Test func theEventsViewReadsLikeSQLitesWithPsql() async throws {
        try await TestPostgres.withDatabase { url in
            let store = try EventStore(location: url, options: .init(autoCreate: .unlimited))
            defer { store.close() }
            _ = try await store.append(Data("hello".utf8), to: "orders")
            let row = try await TestPostgres.psql(url, "SELECT stream, seq, convert_from(payload, 'UTF8'), length(time) FROM events")
            #expect(row == "orders|1|hello|24")
        }
    }

    @Test func aDatabaseWithANewerSchemaIsRefusedAndLeftAlone() async throws {
        try await TestPostgres.withDatabase { url in
            try EventStore(location: url).close()
            try await TestPostgres.psql(url, "INSERT INTO replay_migrations (identifier) VALUES ('9999_from_the_future')")
            #expect(throws: StoreError.newerSchema(path: url, unknownMigrations: ["9999_from_the_future"])) {
                try EventStore(location: url)
            }
            // This build's migrations and the future one, nothing more.
            #expect(try await TestPostgres.psql(url, "SELECT count(*) FROM replay_migrations") == "\(Migrations.embeddedPostgres.count + 1)")
        }
    }

    @Test func anUnreachableServerOrATLSDemandIsAClearErrorAtOpen() throws {
        // A port nothing listens on (bound, never listened).
        let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(probe) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(probe, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(probe, $0, &length) } }
        let port = UInt16(bigEndian: address.sin_port)
        do {
            _ = try EventStore(location: "postgres://replay:secret@127.0.0.1:\(port)/replay")
            Issue.record("opened a store on a closed port")
        } catch {
            guard case .unavailable(let reason) = error else { throw TestFailure("expected unavailable, got \(error)") }
            #expect(!reason.contains("secret"), "the password stays out of messages: \(reason)")
        }
        #expect(throws: StoreError.self) { try EventStore(location: "postgresql://replay@127.0.0.1:\(port)/replay?sslmode=require") }
    }
}
