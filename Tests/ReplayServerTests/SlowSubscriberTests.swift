import Foundation
import NIOCore
import NIOPosix
import ReplayProtocol
import ReplayTesting
import Testing

@Suite("replayd: slow subscribers", .timeLimit(.minutes(5)))
struct SlowSubscriberTests {
    /// A subscriber that stops reading while 100 MB are published: the daemon stops
    /// pushing to it (its memory does not follow the backlog), never disconnects it, and
    /// once it reads again it receives every event, in order, from the store.
    @Test func aStoppedSubscriberCostsBoundedMemoryAndLosesNothing() async throws {
        try await withDaemon(arguments: ["--default-capacity", "unlimited", "--sync", "normal"]) { daemon in
            let total = 100_000
            let payload = String(repeating: "x", count: 1_000)
            // A raw socket we do not read from: the daemon's writes fill the kernel buffer.
            let stopped = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(stopped) }
            #expect(connectUnixSocket(stopped, daemon.socketPath))
            let subscribe = "SUB bulk slow all\r\n"
            #expect(write(stopped, subscribe, subscribe.utf8.count) == subscribe.utf8.count)

            let baseline = daemon.residentBytes
            try await withWireClient(daemon.socketPath) { publisher in
                for chunk in 0..<10 {
                    let batch = (0..<(total / 10)).map { "\(chunk * total / 10 + $0):" + payload }
                    _ = try await publisher.publish("bulk", batch)
                }
            }
            let peak = daemon.residentBytes
            #expect(peak - baseline < memoryBudget(60 << 20), "RSS grew by \((peak - baseline) >> 20) MB while 100 MB waited for a stopped subscriber")

            // Now read everything from the raw socket: blocking reads, so on a thread of
            // their own (`blockingCall`), never on the test process's cooperative pool.
            let (next, misordered) = try await blockingCall { () throws -> (UInt64, [String]) in
                var decoder = ServerFrameDecoder()
                var buffer = ByteBuffer()
                var next: UInt64 = 1
                var misordered: [String] = []
                var chunk = [UInt8](repeating: 0, count: 1 << 16)
                while next <= UInt64(total) {
                    let count = read(stopped, &chunk, chunk.count)
                    guard count > 0 else { throw TestFailure("the daemon closed the slow subscriber at event \(next)") }
                    buffer.writeBytes(chunk[0..<count])
                    while let frame = try decoder.next(&buffer) {
                        switch frame {
                        case .event(_, _, let sequence, _, let body, _, _, _):
                            if sequence != next || !String(buffer: body).hasPrefix("\(sequence - 1):") {
                                misordered.append("expected \(next), got \(sequence)")
                            }
                            next = sequence + 1
                        case .hello, .ok: continue
                        default: throw TestFailure("unexpected \(frame)")
                        }
                    }
                }
                return (next, misordered)
            }
            #expect(misordered.isEmpty, "\(misordered.prefix(5))")
            #expect(next == UInt64(total) + 1)
        }
    }
}
