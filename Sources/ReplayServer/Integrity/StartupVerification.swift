import Foundation
import Logging
import ReplayModel
import ReplayStore

/// `replayd --verify-on-start`: every stream's hash chain recomputed before the doors
/// open, as `replayctl verify` would, on a thread of its own. A broken chain is logged as an
/// error naming its first bad event, and the daemon still serves: its other events and
/// streams are good, and a read of the bad event gets `corrupt_event`, never its bytes
/// (an operator who would rather not start alerts on the log line or the metric).
enum StartupVerification {
    static func run(_ store: EventStore, logger: Logger) async -> [ChainReport] {
        let started = ContinuousClock.now
        let reports = await withCheckedContinuation { (done: CheckedContinuation<[ChainReport], Never>) in
            Thread.detachNewThread {
                var reports: [ChainReport] = []
                for name in store.streams.map(\.name).sorted() {
                    do {
                        reports.append(try store.verify(name))
                    } catch {
                        logger.error("could not verify a stream", metadata: ["stream": "\(name)", "error": "\(error)"])
                    }
                }
                done.resume(returning: reports)
            }
        }
        for report in reports where !report.isIntact {
            let broken = report.broken!
            logger.error(
                "hash chain broken",
                metadata: ["stream": "\(report.stream)", "seq": "\(broken.sequence)", "expected": "\(broken.expected)", "found": "\(broken.found)"])
        }
        let seconds = (ContinuousClock.now - started) / .seconds(1)
        logger.info(
            "verified hash chains",
            metadata: [
                "streams": "\(reports.count)", "broken": "\(reports.filter { !$0.isIntact }.count)",
                "events": "\(reports.reduce(0) { $0 + $1.events })", "seconds": "\(String(format: "%.2f", seconds))",
            ])
        return reports
    }
}
