import Foundation
import ReplayModel

/// One idempotent producer of one stream, as the writer keeps it: its epoch, the last
/// producer sequence number (pseq) committed, and the sequence numbers the most recent
/// pseqs got, as runs, so that a retry is answered with its original sequence number.
struct ProducerState: Sendable, Equatable {
    /// pseqs `pseq ..< pseq + count` got sequence numbers `sequence ..< sequence + count`.
    struct Run: Sendable, Equatable {
        var pseq: UInt64
        var sequence: UInt64
        var count: UInt64
    }

    /// How many of the latest pseqs keep their sequence number (a retry of an older one is
    /// still refused as a duplicate, without its number), and in how many runs at most.
    static let rememberedPseqs: UInt64 = 65_536
    static let maxRuns = 64
    /// How long an idle producer is remembered: a week after its last publish (the Durable
    /// Streams protocol's recommendation). After that it is new again: pseq 0, any epoch.
    static let idleLifetimeMillis: Int64 = 7 * 24 * 3600 * 1000

    var epoch: UInt64
    var lastPseq: UInt64
    var runs: [Run] = []
    /// When it last published (ms since 1970): idle producers are forgotten.
    var updatedAt: Int64

    enum Verdict: Equatable {
        /// A new publish: store it.
        case accept
        /// Already committed: answer with its sequence number (`nil`: too old to remember).
        case duplicate(UInt64?)
        case refuse(StoreError)
    }

    /// The idempotent producer's rule: a lower epoch is fenced; a higher one starts again at
    /// pseq 0; within an epoch, pseqs come one by one.
    static func judge(_ state: ProducerState?, _ stamp: ProducerStamp, stream: String) -> Verdict {
        let gap = { (expected: UInt64) in
            Verdict.refuse(.producerSequenceGap(stream: stream, producer: stamp.id, expected: expected, received: stamp.sequence))
        }
        guard let state else { return stamp.sequence == 0 ? .accept : gap(0) }
        if stamp.epoch < state.epoch {
            return .refuse(.staleEpoch(stream: stream, producer: stamp.id, epoch: stamp.epoch, current: state.epoch))
        }
        if stamp.epoch > state.epoch { return stamp.sequence == 0 ? .accept : gap(0) }
        if stamp.sequence <= state.lastPseq { return .duplicate(state.sequence(ofPseq: stamp.sequence)) }
        return stamp.sequence == state.lastPseq + 1 ? .accept : gap(state.lastPseq + 1)
    }

    func sequence(ofPseq pseq: UInt64) -> UInt64? {
        runs.last { pseq >= $0.pseq && pseq - $0.pseq < $0.count }.map { $0.sequence + (pseq - $0.pseq) }
    }

    /// Records an accepted publish of `stamp` that got `sequence` (in place: it comes once
    /// per event, and the runs must not be copied each time).
    mutating func record(_ stamp: ProducerStamp, sequence: UInt64, now: Int64) {
        if stamp.epoch != epoch { runs.removeAll() }
        epoch = stamp.epoch
        lastPseq = stamp.sequence
        updatedAt = now
        if let last = runs.last, last.pseq + last.count == stamp.sequence, last.sequence + last.count == sequence {
            runs[runs.count - 1].count += 1
            return
        }
        runs.append(Run(pseq: stamp.sequence, sequence: sequence, count: 1))
        // Forget what falls out of the window, and the oldest runs beyond `maxRuns`.
        let oldest = stamp.sequence + 1 > Self.rememberedPseqs ? stamp.sequence + 1 - Self.rememberedPseqs : 0
        while let first = runs.first {
            if runs.count > Self.maxRuns || first.pseq + first.count <= oldest {
                runs.removeFirst()
            } else {
                if first.pseq < oldest {
                    let forget = oldest - first.pseq
                    runs[0] = Run(pseq: oldest, sequence: first.sequence + forget, count: first.count - forget)
                }
                break
            }
        }
    }
}

extension ProducerState {
    /// A new producer's state, before its first publish is recorded.
    init(first stamp: ProducerStamp, now: Int64) {
        self.init(epoch: stamp.epoch, lastPseq: 0, updatedAt: now)
    }
}
