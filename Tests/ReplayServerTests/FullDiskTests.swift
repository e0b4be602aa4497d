import Foundation
import NIOCore
import ReplayProtocol
import ReplayTesting
import Testing

/// The database on a small real filesystem (a tmpfs the test mounts; root is needed to
/// mount it): publishes beyond the space get `storage_full`, nothing acknowledged is lost,
/// reads go on, and publishing works again once space is freed.
@Suite("replayd: full disk", .timeLimit(.minutes(3)))
struct FullDiskTests {
    @Test func storageFullIsAClearErrorAndNothingAcknowledgedIsLost() async throws {
        try #require(geteuid() == 0, "this test mounts a small tmpfs, which needs root")
        try await withTemporaryDirectory { directory in
            let disk = directory + "/disk"
            try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
            try await withTmpfs(at: disk, size: "6m") {
                let daemon = try await TestDaemon.start(in: directory, arguments: ["--default-capacity", "unlimited"], database: "disk/replay.sqlite")
                defer { Task { await daemon.stop() } }

                // Fill the disk to about 1 MB from full.
                _ = try await runProgram("/bin/sh", ["-c", "dd if=/dev/zero of='\(disk)/filler' bs=1M count=4 2>/dev/null || true"])
                let payload = String(repeating: "p", count: 900)
                var acknowledged: [UInt64: String] = [:]
                var refusals = 0
                try await withWireClient(daemon.socketPath) { client in
                    for round in 0..<200 {
                        let batch = (0..<50).map { "\(round)-\($0)-" + payload }
                        var buffer = ByteBuffer()
                        for body in batch { ClientCommand.publish(stream: "s", payload: ByteBuffer(string: body)).write(into: &buffer) }
                        try await client.send(buffer)
                        for body in batch {
                            switch try await client.expectFrame() {
                            case .published(let sequence): acknowledged[sequence] = body
                            case .error(let error):
                                #expect(error.code == .storageFull, "\(error)")
                                refusals += 1
                            case let other: throw TestFailure("unexpected \(other)")
                            }
                        }
                        if refusals > 0 { break }
                    }
                }
                #expect(refusals > 0, "the disk never filled up")
                #expect(!acknowledged.isEmpty)
                #expect(daemon.isRunning)

                // Reads still work, and hold exactly what was acknowledged.
                try await withWireClient(daemon.socketPath) { client in
                    try await client.subscribe("s", sid: "r")
                    let events = try await client.events(acknowledged.count)
                    #expect(events.map(\.0) == Array(1...UInt64(acknowledged.count)), "sequence numbers have no hole")
                    for (sequence, body) in events { #expect(acknowledged[sequence] == body) }
                }

                // Free the space: publishing works again and numbering continues.
                try FileManager.default.removeItem(atPath: disk + "/filler")
                try await withWireClient(daemon.socketPath) { client in
                    let next = try await client.publish("s", ["after the disk was freed"])
                    #expect(next == [UInt64(acknowledged.count) + 1])
                }
                #expect(await daemon.stop() == 0)
            }
        }
    }
}
