import Foundation
import ReplayTesting
import Testing

@testable import ReplayServer

/// The socket file is made with exactly its mode, and the process's umask is never touched
/// to do it: the umask is shared by every thread, and while the listener had narrowed it
/// around its bind, whatever else the process created meanwhile lost its modes (in the
/// test process, a PostgreSQL cluster's folder that its owner could no longer enter, and a
/// browser that crashed on its profile).
@Suite("The socket file")
struct SocketFileTests {
    static func processUmask() throws -> String {
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        return try #require(status.split(separator: "\n").first { $0.hasPrefix("Umask:") }.map(String.init))
    }

    @Test func aSocketIsBoundWithExactlyItsModeWhateverTheUmask() async throws {
        try await withTemporaryDirectory { directory in
            let before = try Self.processUmask()
            let path = directory + "/replayd.sock"
            let fd = try SocketFile.listen(at: path, mode: 0o660, backlog: 8)
            defer { close(fd) }
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            #expect((attributes[.posixPermissions] as? Int) == 0o660, "group write survives the umask (\(before))")
            #expect(try Self.processUmask() == before)
            #expect(SocketFile.isAlive(path), "it listens")
        }
    }

    @Test func nothingChangesTheProcesssUmask() throws {
        let found = try swiftLines(matching: #"\bumask\s*\("#, under: ["Sources"])
        #expect(found.isEmpty, "make files with their modes instead (fchmod, chmod before use):\n\(found.joined(separator: "\n"))")
    }
}
