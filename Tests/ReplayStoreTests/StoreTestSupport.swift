import Foundation
import GRDB
import ReplayCore
import ReplayTesting

@testable import ReplayStore

/// The two databases a store runs on: the store conformance tests run against each.
enum StoreKind: String, CaseIterable, Sendable, CustomStringConvertible {
    case sqlite
    case postgres

    var description: String { rawValue }
}

/// Where a test's store lives: a new temp folder (SQLite), or a new database on the test
/// PostgreSQL server (`TestPostgres`); removed when `body` returns.
func withStoreLocation<T>(_ kind: StoreKind, _ body: (_ location: String) async throws -> T) async throws -> T {
    switch kind {
    case .sqlite: try await withTemporaryDirectory(body)
    case .postgres: try await TestPostgres.withDatabase(body)
    }
}

/// Opens a store on a real SQLite file in the folder `location`, or on the real
/// PostgreSQL database `location` names.
func openStore(
    _ location: String, name: String = "replay.sqlite", durability: Durability = .full,
    autoCreate: StreamConfig? = nil, clock: @escaping @Sendable () -> Date = Date.init
) throws -> EventStore {
    try EventStore(
        location: EventStore.isPostgres(location) ? location : location + "/" + name,
        options: .init(durability: durability, autoCreate: autoCreate), clock: clock)
}

/// One integer from SQL that reads the same in both databases, through their own shells'
/// way in: GRDB for SQLite, psql for PostgreSQL.
func scalar(_ store: EventStore, _ sql: String) async throws -> Int? {
    guard EventStore.isPostgres(store.location) else {
        return try store.query { db in try Int.fetchOne(db, sql: sql) }
    }
    // The tests' URLs carry no password, so the store's (redacted) location is the URL.
    return Int(try await TestPostgres.psql(store.location, sql))
}

/// Runs a shell command; returns its standard output, throws on a non-zero exit.
@discardableResult
func shell(_ command: String) async throws -> String {
    let result = try await runProgram("/bin/sh", ["-c", command])
    guard result.status == 0 else { throw TestFailure("`\(command)` exited \(result.status): \(result.stderr)") }
    return result.stdout
}

extension EventStore {
    /// Appends text payloads in order, waiting for each.
    func appendAll(_ payloads: [String], to stream: String) async throws -> [UInt64] {
        var sequences: [UInt64] = []
        for payload in payloads { sequences.append(try await append(Data(payload.utf8), to: stream).sequence) }
        return sequences
    }

    /// Every retained payload of a stream as text, read in small pages.
    func texts(_ stream: String) throws -> [String] {
        var result: [String] = []
        var from: UInt64 = 1
        while true {
            let page = try read(stream, from: from, limit: 3)
            result += page.map { String(decoding: $0.payload, as: UTF8.self) }
            guard let last = page.last else { return result }
            from = last.sequence + 1
        }
    }
}
