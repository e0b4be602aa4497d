import Foundation
import Logging
import ReplayStore
import ServiceLifecycle

/// Tells a service manager how the daemon is, as `sd_notify(3)` does (by hand: one
/// datagram of `KEY=value` lines to a Unix socket is the whole protocol, and libsystemd
/// is not a dependency):
///
/// - `READY=1` once every door listens (`Type=notify`: units ordered after replayd start
///   only then), with a `STATUS=` line;
/// - `WATCHDOG=1` every half `WATCHDOG_USEC`, each time only after the store's writer has
///   answered a barrier within that half: a daemon whose writer is stuck stops sending,
///   and systemd restarts it;
/// - `STATUS=` with the streams and the socket's connections at each beat;
/// - `STOPPING=1` as the graceful shutdown begins (this service is the group's last, so it
///   is stopped first; systemd stops watching the watchdog then).
struct ServiceManagerNotifier: Service {
    let link: ServiceManagerLink
    let store: EventStore
    let ready: DaemonReadiness
    /// The daemon's state in a few words, for `systemctl status`.
    let status: @Sendable () -> String
    let logger: Logger

    func run() async throws {
        let socket: NotifySocket
        do {
            socket = try NotifySocket(link.socket)
        } catch {
            // Not worth stopping a daemon that serves: said once, and nothing is sent.
            logger.warning("systemd: cannot notify \(link.socket): \(error)")
            return
        }
        defer { socket.close() }
        for await _ in ready.served.cancelOnGracefulShutdown() {}
        // Shut down before every door listened: nothing to announce.
        guard ready.allListening else { return }
        socket.send("READY=1\nSTATUS=\(status())")
        let beat = link.watchdog.map { $0 / 2 } ?? .seconds(10)
        await withGracefulShutdownHandler {
            while (try? await cancelWhenGracefulShutdown { try await Task.sleep(for: beat) }) != nil {
                if link.watchdog == nil {
                    socket.send("STATUS=\(status())")
                } else if await writerAnswers(within: beat) {
                    socket.send("WATCHDOG=1\nSTATUS=\(status())")
                } else {
                    logger.warning("systemd: the store's writer did not answer within \(beat); no watchdog beat")
                }
            }
        } onGracefulShutdown: {
            socket.send("STOPPING=1\nSTATUS=draining connections")
        }
    }

    /// Whether the writer answers a barrier (an error is an answer too) within `limit`.
    /// It waits for the answer however long it takes: a stuck writer stops the beats.
    private func writerAnswers(within limit: Duration) async -> Bool {
        let asked = ContinuousClock.now
        await withCheckedContinuation { continuation in store.barrier { _ in continuation.resume() } }
        return ContinuousClock.now - asked <= limit
    }
}

/// A datagram socket to the service manager's `NOTIFY_SOCKET`.
struct NotifySocket: Sendable {
    private let descriptor: Int32
    private let address: UnixSocketAddress

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    init(_ path: String) throws {
        guard let address = UnixSocketAddress(path) else { throw Failure(description: "the path is longer than a Unix socket's") }
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw Failure(description: String(cString: strerror(errno))) }
        self.descriptor = descriptor
        self.address = address
    }

    /// Sends one message, without waiting: a manager that does not read its socket (its
    /// queue full) loses the message rather than holding a thread of the daemon, and one
    /// that is gone is not the daemon's failure. (A blocking send held the shutdown of a
    /// daemon whose manager had stopped reading, for good.)
    func send(_ message: String) {
        let bytes = Array(message.utf8)
        _ = address.withSockaddr { target, length in
            bytes.withUnsafeBytes { sendto(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT), target, length) }
        }
    }

    func close() {
        _ = Glibc.close(descriptor)
    }
}
