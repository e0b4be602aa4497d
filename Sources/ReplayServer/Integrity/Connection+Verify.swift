import Foundation
import NIOCore
import ReplayModel
import ReplayProtocol
import ReplayStore

extension Connection {
    /// VERIFY: each stream's hash chain recomputed, one stream after another, on a thread
    /// of its own (a stream of millions of events takes seconds, which no event loop,
    /// cooperative thread or read thread may wait out). The writer is never held: each
    /// page is one read snapshot beside it (`EventStore.verify`).
    ///
    /// `targets` are names or patterns; none means every stream. A name that is no stream
    /// is refused; a pattern that matches none gives no report.
    func verify(_ targets: [String], through: UInt64? = nil, slot: ReplyOrder.Slot) {
        let store = context.store
        let replies = replies
        let logger = logger
        let names: [String]
        do throws(ReplayError) {
            names = try Self.streams(targets, in: store)
        } catch {
            return replies.fill(slot, with: .error(error))
        }
        Thread.detachNewThread {
            switch StartupVerification.verify(names, through: through, in: store, logger: logger) {
            case .success(let reports):
                let json = (try? JSONEncoder().encode(reports)) ?? Data("[]".utf8)
                replies.fill(slot, with: .list(json: ByteBuffer(bytes: json)))
            case .failure(let error):
                replies.fill(slot, with: .error(ReplayError(error)))
            }
        }
    }

    /// The streams VERIFY checks, in name order (soft-deleted ones are still read by their
    /// forks, and checked too).
    static func streams(_ targets: [String], in store: EventStore) throws(ReplayError) -> [String] {
        let all = store.streams.map(\.name).sorted()
        guard !targets.isEmpty else { return all }
        var names: [String] = []
        for target in targets {
            if StreamPattern.isPattern(target) {
                switch StreamPattern.parse(target) {
                case .success(let pattern): names += all.filter(pattern.matches)
                case .failure(let error): throw ReplayError(.invalidName, "\(target): \(error)")
                }
            } else {
                guard store.info(target) != nil else { throw ReplayError(StoreError.unknownStream(target)) }
                names.append(target)
            }
        }
        var seen = Set<String>()
        return names.filter { seen.insert($0).inserted }
    }
}
