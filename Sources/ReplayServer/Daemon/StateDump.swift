import Dispatch
import Foundation
import Logging

/// `kill -USR1 <replayd>` writes the daemon's live state to its log: every connection with
/// its subscriptions (and where each stands) and replies owed, then every stream with its
/// bounds and parked cursors. For an operator, or a test, facing a subscriber that waits
/// for an event: it says whether the daemon thinks it delivered, and which step is stuck.
///
/// The signal is taken by a Dispatch source on a queue of its own, so the dump never runs
/// on an event loop or the cooperative pool, and never inside a signal handler.
final class StateDump {
    private let source: any DispatchSourceSignal

    init(logger: Logger, describe: @escaping @Sendable () -> [String]) {
        signal(SIGUSR1, SIG_IGN)  // delivered to the Dispatch source instead
        source = DispatchSource.makeSignalSource(signal: SIGUSR1, queue: DispatchQueue(label: "replay.state-dump"))
        source.setEventHandler {
            let lines = describe()
            logger.notice("state dump begin (\(lines.count) lines)")
            for line in lines { logger.notice("state: \(line)") }
            logger.notice("state dump end")
        }
        source.resume()
    }

    func stop() {
        source.cancel()
    }
}
