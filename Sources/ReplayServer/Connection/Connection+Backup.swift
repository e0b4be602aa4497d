import Foundation
import NIOCore
import ReplayProtocol
import ReplayStore

extension Connection {
    /// BACKUP: the store copied to `path` on a thread of its own (the copy takes seconds
    /// per gigabyte, which no event loop, cooperative thread or read thread may wait out),
    /// answered with what the copy holds.
    ///
    /// The daemon writes the file, as its own user: only that user or root may ask, so
    /// that a client let in by the socket's group or `--allow-uid` cannot have the daemon
    /// write where the client itself may not.
    func backUp(to path: String, slot: ReplyOrder.Slot) {
        let store = context.store
        let replies = replies
        let logger = logger
        Task {
            guard let peer = await peer(), peer.uid == 0 || peer.uid == getuid() else {
                return replies.fill(
                    slot, with: .error(ReplayError(.forbidden, "only replayd's own user (uid \(getuid())) or root may take a backup")))
            }
            let started = ContinuousClock.now
            let result = await withCheckedContinuation { (done: CheckedContinuation<Result<[(stream: String, lastSequence: UInt64)], StoreError>, Never>) in
                Thread.detachNewThread {
                    done.resume(returning: Result { () throws(StoreError) in try store.backup(to: path) })
                }
            }
            switch result {
            case .failure(let error):
                logger.warning("backup failed", metadata: ["path": "\(path)", "error": "\(error)"])
                replies.fill(slot, with: .error(ReplayError(error)))
            case .success(let streams):
                let bytes = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
                let description = BackupDescription(
                    path: path, bytes: bytes, seconds: (ContinuousClock.now - started) / .seconds(1),
                    streams: streams.map { BackupDescription.Stream(stream: $0.stream, last: $0.lastSequence) })
                logger.info("backup written", metadata: ["path": "\(path)", "bytes": "\(bytes)", "streams": "\(streams.count)"])
                let json = (try? JSONEncoder().encode(description)) ?? Data()
                replies.fill(slot, with: .info(json: ByteBuffer(bytes: json)))
            }
        }
    }
}
