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
                switch verify(store.streams.map(\.name).sorted(), in: store, logger: logger) {
                case .success(let reports):
                    done.resume(returning: reports)
                case .failure(let error):
                    // The store could not be read (not a broken chain): say so, and serve.
                    logger.error("could not verify the hash chains", metadata: ["error": "\(error)"])
                    done.resume(returning: [])
                }
            }
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

    /// Each stream's chain recomputed in turn (blocking: call it from a thread of its own),
    /// each broken one logged with its first bad event; a stream deleted meanwhile is left
    /// out. What VERIFY and `--verify-on-start` both do.
    static func verify(
        _ names: [String], through: UInt64? = nil, in store: EventStore, logger: Logger
    ) -> Result<[ChainReport], StoreError> {
        var reports: [ChainReport] = []
        for name in names {
            do throws(StoreError) {
                reports.append(try store.verify(name, through: through))
            } catch .unknownStream {
                continue
            } catch {
                return .failure(error)
            }
        }
        for report in reports {
            guard let broken = report.broken else { continue }
            logger.error(
                "hash chain broken",
                metadata: ["stream": "\(report.stream)", "seq": "\(broken.sequence)", "expected": "\(broken.expected)", "found": "\(broken.found)"])
        }
        return .success(reports)
    }
}
