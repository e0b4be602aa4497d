import Foundation
import GRDB
import ReplayCore
import ReplayModel
import ReplaySync
import ReplayTesting
import Testing

@testable import ReplayStore

@Suite("Schema and migrations")
struct MigrationTests {
    static let migrationsFolder = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("migrations").path

    /// migrations/ is the only copy of the schema; what the build embeds (the EmbedMigrations
    /// plugin) must be exactly its files, in order.
    @Test func embeddedMigrationsAreTheFolderContent() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.migrationsFolder)
            .filter { $0.hasSuffix(".sql") }.sorted()
        #expect(files.map { String($0.dropLast(4)) } == Migrations.embedded.map(\.identifier))
        for (file, embedded) in zip(files, Migrations.embedded) {
            let text = try String(contentsOfFile: Self.migrationsFolder + "/" + file, encoding: .utf8)
            #expect(text == embedded.sql + "\n", "\(file) differs from its embedded copy")
        }
    }

    @Test func anEmptyFileBecomesAFullSchema() async throws {
        try await withTemporaryDirectory { directory in
            _ = FileManager.default.createFile(atPath: directory + "/replay.sqlite", contents: Data())
            let store = try openStore(directory)
            defer { store.close() }
            let applied = try store.query { db in try Migrations.migrator().appliedIdentifiers(db) }
            #expect(applied == Set(Migrations.embedded.map(\.identifier)))
            let mode = try store.query { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") }
            #expect(mode == "wal")
        }
    }

    /// A database made by the first schema version is upgraded in place, data kept.
    @Test func aFirstVersionDatabaseIsUpgradedInPlace() async throws {
        try await withTemporaryDirectory { directory in
            try await makeDatabase(
                in: directory, upTo: "0001_initial",
                """
                INSERT INTO streams (name, capacity, created_at, first_seq, last_seq, event_count, byte_count)
                VALUES ('old', 5, '2026-01-01T00:00:00.000Z', 1, 1, 1, 3);
                INSERT INTO event_log VALUES (1, 1, '2026-01-01T00:00:00.000Z', CAST('hey' AS BLOB));
                """)
            let store = try openStore(directory)
            defer { store.close() }
            #expect(store.info("old")?.config == StreamConfig(capacity: 5))
            #expect(try store.texts("old") == ["hey"])
            #expect(try await store.appendAll(["next"], to: "old") == [2])
            let columns = try store.query { db in try db.columns(in: "streams").map(\.name) }
            #expect(columns.contains("source_command"))
        }
    }

    /// A producer row written before schema 0009 (its runs as triples) still answers a
    /// retry with the original sequence number after the upgrade, and is rewritten as
    /// deltas by the producer's next publish.
    @Test func aProducerRowFromBeforeCompactRunsIsReadAfterTheUpgrade() async throws {
        try await withTemporaryDirectory { directory in
            let runs: [ProducerState.Run] = [.init(pseq: 0, sequence: 1, count: 2), .init(pseq: 2, sequence: 7, count: 1)]
            try await makeDatabase(
                in: directory, upTo: "0008_stream_creators",
                """
                INSERT INTO streams (id, name, created_at, first_seq, last_seq, event_count, byte_count)
                VALUES (1, 'pay', '2026-01-01T00:00:00.000Z', 1, 7, 7, 7);
                INSERT INTO producers (stream_id, producer, epoch, last_pseq, runs, updated_at) VALUES (1, 'billing', 0, 2, ?, ?)
                """,
                arguments: [ProducerRunsFormat.triples.pack(runs).databaseValue, Int64(Date().timeIntervalSince1970 * 1000).databaseValue])
            let store = try openStore(directory)
            defer { store.close() }
            let stamp = { (pseq: UInt64) in AppendConditions(producer: ProducerStamp(id: "billing", epoch: 0, sequence: pseq)) }
            let results = GuaranteeTests.Results()
            for pseq in UInt64(1)...3 {
                store.append(Data("p\(pseq)".utf8), to: "pay", conditions: stamp(pseq), sink: results, token: pseq)
            }
            let got = try await results.wait(for: 3)
            #expect((1...3).map { got[$0]?.sequence } == [.success(2), .success(7), .success(8)])
            store.close()  // the row waits behind the stamps (0011) until a second has passed, or the close
            let queue = try DatabaseQueue(path: directory + "/replay.sqlite")
            defer { try? queue.close() }
            let (stored, format) = try await queue.read { db in
                let row = try #require(try Row.fetchOne(db, sql: "SELECT runs, runs_format FROM producers"))
                return (row["runs"] as Data, row["runs_format"] as Int64)
            }
            #expect(format == ProducerRunsFormat.deltas.rawValue)
            #expect(ProducerRunsFormat.deltas.unpack(stored) == [.init(pseq: 0, sequence: 1, count: 2), .init(pseq: 2, sequence: 7, count: 2)])
        }
    }

    /// Schema 0011 numbers the producers' rows for their stamps, each one apart, and gives
    /// every stream with producers a snapshot at its last event: the rows written before
    /// are current, and no stamps are read back for them.
    @Test func producerRowsFromBeforeStampsAreNumberedAndSnapshotted() async throws {
        try await withTemporaryDirectory { directory in
            try await makeDatabase(
                in: directory, upTo: "0010_group_held_runs",
                """
                INSERT INTO streams (id, name, created_at, first_seq, last_seq, event_count, byte_count)
                VALUES (1, 'pay', '2026-01-01T00:00:00.000Z', 1, 7, 7, 7), (2, 'ship', '2026-01-01T00:00:00.000Z', 1, 4, 4, 4),
                       (3, 'idle', '2026-01-01T00:00:00.000Z', 1, 9, 9, 9);
                INSERT INTO producers (stream_id, producer, epoch, last_pseq, runs, updated_at)
                VALUES (1, 'billing', 0, 2, x'', 0), (1, 'refunds', 0, 0, x'', 0), (2, 'billing', 0, 5, x'', 0)
                """)
            let store = try openStore(directory)
            defer { store.close() }
            let (refs, snapshots) = try store.query { db in
                (
                    try Int64.fetchAll(db, sql: "SELECT ref FROM producers ORDER BY stream_id, producer"),
                    try Row.fetchAll(db, sql: "SELECT stream_id, through_seq FROM producer_snapshots ORDER BY stream_id")
                        .map { [$0[0] as Int64, $0[1] as Int64] }
                )
            }
            #expect(refs == [1, 2, 3])
            #expect(snapshots == [[1, 7], [2, 4]])
        }
    }

    static let schemaV2Database = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().appendingPathComponent("Fixtures/schema-v2-database.sqlite").path

    static let streamColumns = """
        SELECT name, capacity, max_bytes, max_age_seconds, created_at, first_seq, last_seq, event_count,
               byte_count, terminal, terminal_message, terminal_at, source_command, source_connect, source_options
        FROM streams ORDER BY name
        """
    static let eventRows = "SELECT stream, seq, time, payload FROM events ORDER BY stream, seq"

    /// A database as the schema-v2 release wrote it (made by that release's own replayd and
    /// replayctl: Fixtures/make-schema-v2-database.sh) is converted in place: every
    /// stream, setting, terminal state, source and event survives, the `events` view reads
    /// exactly as before, and the converted log goes on.
    @Test func aDatabaseWrittenByTheSchemaV2ReleaseIsConvertedInPlace() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/replay.sqlite"
            try FileManager.default.copyItem(atPath: Self.schemaV2Database, toPath: path)
            let old = try DatabaseQueue(path: path)
            let (oldStreams, oldEvents) = try old.read { db in
                (try Row.fetchAll(db, sql: Self.streamColumns), try Row.fetchAll(db, sql: Self.eventRows))
            }
            try old.close()
            #expect(oldStreams.count == 7)
            #expect(oldEvents.count == 12)

            let store = try openStore(directory)
            defer { store.close() }
            let (streams, events) = try store.query { db in
                (values(try Row.fetchAll(db, sql: Self.streamColumns)), values(try Row.fetchAll(db, sql: Self.eventRows)))
            }
            #expect(streams == values(oldStreams))
            #expect(events == values(oldEvents))
            let applied = try store.query { db in try Migrations.migrator().appliedIdentifiers(db) }
            #expect(applied.contains("0003_one_integer_key"))
            let columns = try store.query { db in try db.columns(in: "event_log").map(\.name) }
            // `stamp`: schema 0011; `origin`: 0012; `traceparent`: 0013; `hash`: 0014; `event_key`: 0015;
            // `expires_at`: 0020
            #expect(columns == ["key", "time", "payload", "stamp", "origin", "traceparent", "hash", "event_key", "expires_at"])

            // Through the store: settings, windows, terminal states, the source.
            #expect(store.info("orders")?.config == StreamConfig(capacity: nil))
            #expect(store.info("small").map { ($0.firstSequence, $0.lastSequence) } ?? (0, 0) == (8, 10))
            #expect(store.info("sized")?.config.maxBytes == 100_000)
            #expect(store.info("sized")?.config.maxAge == 604_800.0)
            #expect(store.info("done")?.terminal == .completed)
            #expect(store.info("broken")?.terminal == .failed(message: "disk on fire"))
            #expect(store.info("feed")?.config.source?.command == "echo hi")
            #expect(store.info("feed")?.config.source?.connect == .lazy)
            #expect(store.info("empty")?.eventCount == 0)
            let orders = oldEvents.filter { $0["stream"] == "orders" }
            let read = try store.read("orders", from: 1)
            #expect(read.map(\.timestamp) == orders.map { $0["time"] as String })
            #expect(read.map { String(decoding: $0.payload, as: UTF8.self) } == orders.map { String(decoding: $0["payload"] as Data, as: UTF8.self) })

            // A time start finds the converted events; numbering and times go on.
            let fourth = try #require(Timestamp.parse(orders[3]["time"]))
            #expect(try store.firstSequence("orders", since: fourth) <= 4)
            #expect(try store.firstSequence("orders", since: fourth.addingTimeInterval(3600)) == 6)
            let next = try await store.append(Data("next".utf8), to: "orders")
            #expect(next.sequence == 6)
            #expect(next.timestamp >= orders[4]["time"] as String)
            // Events stored before chaining have no hash; the chain starts after them.
            #expect(try store.read("orders", from: 1).count == 6)
            let report = try store.verify("orders")
            #expect(report.isIntact && report.events == 6)
        }
    }

    /// Times never decrease within a stream, even when the clock is set back: `since=`
    /// and age limits binary-search on them.
    @Test func aClockSetBackDoesNotMakeTimesDecrease() async throws {
        try await withTemporaryDirectory { directory in
            // The clock as each append finds it (the store reads it for other work too).
            let now = Locked(3_000.0)
            let store = try openStore(directory, autoCreate: StreamConfig(capacity: nil)) { Date(timeIntervalSince1970: now.value) }
            defer { store.close() }
            try await store.barrier()
            for (payload, time) in zip(["a", "b", "c", "d"], [3_000.0, 1_000.0, 2_000.0, 5_000.0]) {
                now.withLock { $0 = time }
                _ = try await store.append(Data(payload.utf8), to: "s")
            }
            let stamps = try store.read("s", from: 1).map(\.timestamp)
            #expect(stamps == ["1970-01-01T00:50:00.000Z", "1970-01-01T00:50:00.000Z", "1970-01-01T00:50:00.000Z", "1970-01-01T01:23:20.000Z"])
            #expect(try store.firstSequence("s", since: Date(timeIntervalSince1970: 2_500)) == 1)
            #expect(try store.firstSequence("s", since: Date(timeIntervalSince1970: 3_001)) == 4)
            #expect(try store.firstSequence("s", since: Date(timeIntervalSince1970: 6_000)) == 5)
        }
    }

    /// The one-integer key has room for 2^40 - 1 sequence numbers per stream and 2^23 - 1
    /// stream ids: beyond either, a clear `limitReached` for that request, nothing stored.
    @Test func theKeysLimitsAreClearErrors() async throws {
        try await withTemporaryDirectory { directory in
            try openStore(directory).close()
            let queue = try DatabaseQueue(path: directory + "/replay.sqlite")
            try await queue.write { db in
                try db.execute(
                    sql: "INSERT INTO streams (id, name, created_at, first_seq, last_seq) VALUES (?, 'full', '2026-01-01T00:00:00.000Z', ?, ?)",
                    arguments: [LogRowKey.maxStreamID, Int64(LogRowKey.maxSequence), Int64(LogRowKey.maxSequence - 1)])
            }
            try queue.close()
            let store = try openStore(directory)
            defer { store.close() }
            let last = try await store.append(Data("last".utf8), to: "full")
            #expect(last.sequence == LogRowKey.maxSequence)
            await #expect(throws: StoreError.self) { try await store.append(Data("one too many".utf8), to: "full") }
            do {
                _ = try await store.append(Data("x".utf8), to: "full")
            } catch {
                guard case StoreError.limitReached(let reason) = error else { throw error }
                #expect(reason.contains("every sequence number"))
            }
            do {
                _ = try await store.create("another", config: StreamConfig(capacity: 1))
                Issue.record("a stream id beyond the key's room was accepted")
            } catch {
                guard case StoreError.limitReached(let reason) = error else { throw error }
                #expect(reason.contains("stream ids"))
            }
            #expect(try store.read("full", from: 1).map(\.sequence) == [LogRowKey.maxSequence])
            #expect(store.info("another") == nil)
        }
    }

    @Test func aDatabaseFromANewerVersionIsRefused() async throws {
        try await withTemporaryDirectory { directory in
            try openStore(directory).close()
            let queue = try DatabaseQueue(path: directory + "/replay.sqlite")
            try await queue.write { db in
                try db.execute(sql: "INSERT INTO grdb_migrations VALUES ('9999_from_the_future')")
            }
            try queue.close()
            #expect(throws: StoreError.newerSchema(path: directory + "/replay.sqlite", unknownMigrations: ["9999_from_the_future"])) {
                try openStore(directory)
            }
        }
    }

    @Test func aFileThatIsNotADatabaseIsRefusedClearly() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/replay.sqlite"
            try Data(String(repeating: "this is not sqlite\n", count: 100).utf8).write(to: URL(fileURLWithPath: path))
            #expect(throws: StoreError.notADatabase(path: path)) { try openStore(directory) }
        }
    }

    @Test func aSecondStoreOnTheSameDatabaseIsRefusedWhileTheFirstIsOpen() async throws {
        try await withTemporaryDirectory { directory in
            let first = try openStore(directory)
            let error = #expect(throws: StoreError.self) { try openStore(directory) }
            guard case .locked(_, let holder) = error else {
                Issue.record("expected .locked, got \(String(describing: error))")
                return
            }
            #expect(holder == "pid \(getpid())")
            first.close()
        }
    }

    /// `close()` hands the database over at once, whoever still holds the closed store.
    @Test func closeReleasesTheDatabaseForTheNextStore() async throws {
        try await withTemporaryDirectory { directory in
            let first = try openStore(directory)
            first.close()
            let second = try openStore(directory)
            second.close()
            withExtendedLifetime(first) {}
        }
    }

    /// A child that holds a copy of the lock file's descriptor (as every child does between
    /// `fork` and `exec`) does not keep the database locked once the store is closed: the
    /// flaky "in use by another replay process (pid <self>)" of a store reopened while
    /// another test spawned a process. Here the child keeps the copy for its whole life.
    @Test func aChildHoldingTheLockDescriptorDoesNotKeepTheDatabaseLocked() async throws {
        try await withTemporaryDirectory { directory in
            let first = try openStore(directory)
            let lockFile = directory + "/replay.sqlite.lock"
            let fd = try #require(openDescriptor(of: lockFile), "the store holds its lock file open")
            let child = try spawnHolding(fd, "/bin/sleep", "60")
            defer {
                kill(child, SIGKILL)
                var status: Int32 = 0
                waitpid(child, &status, 0)
            }
            first.close()
            let second = try openStore(directory)
            second.close()
        }
    }

    /// A read-only database: as root (where permissions do not bind) on a read-only tmpfs,
    /// otherwise with the file's write bits removed.
    @Test func aReadOnlyDatabaseIsRefusedClearly() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/replay.sqlite"
            if geteuid() == 0 {
                try await withTmpfs(at: directory, size: "4m") {
                    try openStore(directory).close()
                    try await shell("mount -o remount,ro '\(directory)'")
                    #expect(throws: StoreError.readOnly(path: path)) { try openStore(directory) }
                }
            } else {
                try openStore(directory).close()
                chmod(path, 0o444)
                #expect(throws: StoreError.readOnly(path: path)) { try openStore(directory) }
            }
        }
    }
}

/// A database file in `directory` at schema `migration` (as a build of that version left
/// it), with `sql` run in it.
func makeDatabase(in directory: String, upTo migration: String, _ sql: String, arguments: [DatabaseValue] = []) async throws {
    let queue = try DatabaseQueue(path: directory + "/replay.sqlite")
    try Migrations.migrator(upTo: migration).migrate(queue)
    try await queue.write { db in try db.execute(sql: sql, arguments: StatementArguments(arguments)) }
    try queue.close()
}

/// The descriptor of this process that has `path` open, found in /proc/self/fd.
private func openDescriptor(of path: String) -> Int32? {
    let target = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    return entries.compactMap(Int32.init).first { fd in
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")) == target
    }
}

/// Spawns `program` with a copy of `fd` (as descriptor 3) that survives its exec.
private func spawnHolding(_ fd: Int32, _ program: String, _ arguments: String...) throws -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, fd, 3)
    let argv = ([program] + arguments).map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    var pid: pid_t = 0
    let status = posix_spawn(&pid, program, &actions, nil, argv, environ)
    guard status == 0 else { throw TestFailure("posix_spawn failed: \(status)") }
    return pid
}

/// Rows as plain values (GRDB's `Row` is not Sendable), for comparing query results.
private func values(_ rows: [Row]) -> [[DatabaseValue]] {
    rows.map { Array($0.databaseValues) }
}
