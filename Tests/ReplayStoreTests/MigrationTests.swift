import Foundation
import GRDB
@testable import ReplayStore
import ReplayTesting
import Testing

@Suite("Schema and migrations")
struct MigrationTests {
    static let migrationsFolder = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("migrations").path

    /// migrations/ is the source of truth; the build's copy must be exactly its content.
    @Test func embeddedMigrationsAreTheFolderContent() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.migrationsFolder)
            .filter { $0.hasSuffix(".sql") }.sorted()
        #expect(files.map { String($0.dropLast(4)) } == Migrations.embedded.map(\.identifier),
                "run tools/embed-migrations.sh")
        for (file, embedded) in zip(files, Migrations.embedded) {
            let text = try String(contentsOfFile: Self.migrationsFolder + "/" + file, encoding: .utf8)
            #expect(text == embedded.sql + "\n", "\(file) differs from its embedded copy: run tools/embed-migrations.sh")
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
            let path = directory + "/replay.sqlite"
            do {
                let queue = try DatabaseQueue(path: path)
                try Migrations.migrator(upTo: "0001_initial").migrate(queue)
                try await queue.write { db in
                    try db.execute(sql: """
                        INSERT INTO streams (name, capacity, created_at, first_seq, last_seq, event_count, byte_count)
                        VALUES ('old', 5, '2026-01-01T00:00:00.000Z', 1, 1, 1, 3);
                        INSERT INTO event_log VALUES (1, 1, '2026-01-01T00:00:00.000Z', CAST('hey' AS BLOB));
                        """)
                }
                try queue.close()
            }
            let store = try openStore(directory)
            defer { store.close() }
            #expect(store.info("old")?.config == StreamConfig(capacity: 5))
            #expect(try store.texts("old") == ["hey"])
            #expect(try await store.appendAll(["next"], to: "old") == [2])
            let columns = try store.query { db in try db.columns(in: "streams").map(\.name) }
            #expect(columns.contains("source_command"))
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
                try shell("mount -t tmpfs -o size=4m tmpfs '\(directory)'")
                defer { _ = try? shell("umount '\(directory)'") }
                try openStore(directory).close()
                try shell("mount -o remount,ro '\(directory)'")
                #expect(throws: StoreError.readOnly(path: path)) { try openStore(directory) }
            } else {
                try openStore(directory).close()
                chmod(path, 0o444)
                #expect(throws: StoreError.readOnly(path: path)) { try openStore(directory) }
            }
        }
    }
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
