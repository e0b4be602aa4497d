import Foundation
import GRDB
import ReplayTesting
import Testing

@testable import ReplayStore

/// The WAL's file is kept at its working size, so commits rewrite it in place (`WALFile`):
/// reserved when the store opens, kept and started over at a clean stop, and extended
/// without losing the frames a crash left in it.
@Suite("WAL file")
struct WALFileTests {
    static let workingSize = SQLiteLog.walBytes

    static func size(_ path: String) throws -> Int {
        try (FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue ?? -1
    }

    /// How many frames at the start of the WAL at `path` carry its header's salts: the ones
    /// SQLite's recovery reads (older frames, and zeros, end it).
    static func framesOfTheCurrentSalt(_ path: String) throws -> Int {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let word = { (offset: Int) in bytes[offset..<offset + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } }
        let salts = (word(16), word(20))
        var frames = 0
        var offset = WALFile.header
        while offset + WALFile.frameHeader <= bytes.count, (word(offset + 8), word(offset + 12)) == salts {
            frames += 1
            offset += WALFile.frameHeader + WALFile.pageSize
        }
        return frames
    }

    @Test func aNewStoresWALIsReservedAndItsCommitsRewriteIt() async throws {
        try await withTemporaryDirectory { folder in
            let wal = folder + "/replay.sqlite-wal"
            let store = try openStore(folder, autoCreate: StreamConfig(capacity: 100_000))
            defer { store.close() }
            #expect(try Self.size(wal) == Self.workingSize)
            for index in 0..<300 { _ = try await store.append(Data(String(repeating: "x", count: 200 + index).utf8), to: "s") }
            #expect(try Self.framesOfTheCurrentSalt(wal) >= 300, "each commit wrote at least a frame")
            #expect(try Self.size(wal) == Self.workingSize, "written in place, the file never grew")
        }
    }

    @Test func aCleanStopKeepsTheWALStartedOver() async throws {
        try await withTemporaryDirectory { folder in
            let wal = folder + "/replay.sqlite-wal"
            do {
                let store = try openStore(folder, autoCreate: StreamConfig(capacity: 100_000))
                _ = try await store.appendAll((1...500).map { "event \($0)" }, to: "s")
                store.close()
            }
            #expect(try Self.size(wal) == Self.workingSize, "kept, at its size")
            // Started over: the next start's recovery reads one frame, not the 500 commits'.
            #expect(try Self.framesOfTheCurrentSalt(wal) == 1)
            let store = try openStore(folder)
            defer { store.close() }
            #expect(try store.texts("s") == (1...500).map { "event \($0)" })
            let walFrames = try store.queryWriter { db in try db.checkpoint(.passive).walFrameCount }
            #expect(walFrames <= 1)
        }
    }

    /// A reader that keeps its snapshot holds the checkpoints back, and the WAL grows past
    /// its working size; a clean stop cuts it back, as it stopped removing it.
    @Test func aWALThatGrewIsCutBackAtACleanStop() async throws {
        try await withTemporaryDirectory { folder in
            let wal = folder + "/replay.sqlite-wal"
            let store = try openStore(folder, durability: .normal, autoCreate: StreamConfig(capacity: 100_000))
            _ = try await store.append(Data("first".utf8), to: "s")
            var configuration = Configuration()
            configuration.allowsUnsafeTransactions = true  // the snapshot is held across accesses
            let reader = try DatabaseQueue(path: folder + "/replay.sqlite", configuration: configuration)
            try await reader.writeWithoutTransaction { db in
                try db.execute(sql: "BEGIN")
                _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM event_log")
            }
            // 300 events of 100 KB: 7,500 pages or so, past the 5,000 frames reserved.
            let payload = Data(repeating: 0x61, count: 100_000)
            for _ in 0..<300 { _ = try await store.append(payload, to: "s") }
            #expect(try Self.size(wal) > Self.workingSize)
            try await reader.writeWithoutTransaction { db in try db.execute(sql: "COMMIT") }
            try reader.close()
            store.close()
            #expect(try Self.size(wal) == Self.workingSize)
            #expect(try Self.framesOfTheCurrentSalt(wal) == 1)
        }
    }

    /// A crash leaves the WAL with frames the database file does not have yet. Here its
    /// image is taken while the store is open (every commit was fsynced), and cut after its
    /// last frame, so that opening it must extend the file past frames it has to keep.
    @Test func reservingACrashedWALKeepsItsFrames() async throws {
        try await withTemporaryDirectory { folder in
            let image = folder + "/image"
            try FileManager.default.createDirectory(atPath: image, withIntermediateDirectories: true)
            do {
                let store = try openStore(folder, autoCreate: StreamConfig(capacity: 100_000))
                defer { store.close() }
                _ = try await store.appendAll((1...200).map { "event \($0)" }, to: "s")
                for file in ["replay.sqlite", "replay.sqlite-wal"] {
                    try FileManager.default.copyItem(atPath: folder + "/" + file, toPath: image + "/" + file)
                }
            }
            let frames = try Self.framesOfTheCurrentSalt(image + "/replay.sqlite-wal")
            #expect(frames >= 200)
            let cut = WALFile.header + frames * (WALFile.frameHeader + WALFile.pageSize)
            #expect(truncate(image + "/replay.sqlite-wal", off_t(cut)) == 0)

            let store = try openStore(image)
            defer { store.close() }
            #expect(try Self.size(image + "/replay.sqlite-wal") == Self.workingSize)
            #expect(try store.texts("s") == (1...200).map { "event \($0)" })
            #expect(try store.query { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") } == "ok")
        }
    }
}
