import Foundation
import Logging
import ReplayModel
import ReplayStore
import ReplaySync
import ServiceLifecycle

/// Runs key compaction's passes (`EventStore.compact`): every `interval`, a compacted
/// stream gets a pass when something new may be removable since its last one, that is when
/// events came that its readers have passed (`EventStore.compactionEnd`), or a tombstone it
/// kept is now old enough to go. Each pass reads beside the writer and hands it short steps,
/// paced (`pacing`) so that publishes go on between them at their usual latency; passes run
/// one stream at a time. Stops at the group's graceful shutdown.
final class CompactionService: Service, Sendable {
    /// Where a stream's last pass ended, and when a tombstone it kept falls due.
    private struct Mark {
        var through: UInt64
        var tombstoneDue: Int64?
    }

    /// Compaction takes at most a third of the writer's time and of a core: publishes
    /// go on beside it at their usual latency (docs/PERFORMANCE.md, "Key compaction").
    static let pacing = 2.0

    private let store: EventStore
    private let interval: Duration
    private let logger: Logger
    private let started = Locked(false)

    init(store: EventStore, interval: Duration = .seconds(1), logger: Logger) {
        self.store = store
        self.interval = interval
        self.logger = logger
    }

    func run() async throws {
        try started.withLock { started in
            guard !started else { throw ReplayServerError("the compaction service runs once") }
            started = true
        }
        let (store, interval, logger) = (self.store, self.interval, self.logger)
        try? await cancelWhenGracefulShutdown {
            var marks: [String: Mark] = [:]
            while true {
                try await Task.sleep(for: interval)
                let compacted = store.streams.filter { $0.config.compaction != nil && !$0.isSoftDeleted }
                marks = marks.filter { name, _ in compacted.contains { $0.name == name } }
                for info in compacted {
                    // The first pass after a start looks at the whole stream once.
                    if let mark = marks[info.name], (store.compactionEnd(of: info.name) ?? 0) <= mark.through,
                        (mark.tombstoneDue ?? .max) > Timestamp.millis(Date())
                    {
                        continue
                    }
                    do throws(StoreError) {
                        let pass = try await store.compact(info.name, pacing: Self.pacing)
                        marks[info.name] = Mark(through: pass.through, tombstoneDue: pass.tombstoneDue)
                    } catch .unknownStream {
                        marks[info.name] = nil
                    } catch {
                        // Tried again at the next interval: a full disk or an unreachable
                        // database passes, and reads never depended on the pass.
                        logger.warning("compaction of '\(info.name)' stopped: \(error)")
                    }
                }
            }
        }
    }
}
