import Foundation

/// How a producer's runs (`ProducerState.runs`) are laid out in its row's `runs` bytes.
///
/// The row is written with every batch its producer publishes in, so its size is paid at
/// every commit: SQLite writes each page a commit changed to its log, whole. Sixteen
/// producers POSTing one event at a time to one stream each keep 64 runs of one pseq,
/// 1,536 bytes a row as triples: two rows to a 4 KiB page, and a batch rewrote most of
/// the table. As deltas, a run of that kind is three bytes, and the table is one page.
enum ProducerRunsFormat: Int64, Sendable {
    /// Little-endian (first pseq, first sequence, count) triples of 64-bit integers, 24
    /// bytes a run. PostgreSQL's rows are in this layout (an update there writes a new
    /// row version whatever its size, and daemons of the previous version may share the
    /// database during a rolling upgrade), and so are SQLite rows written before schema
    /// `0009`.
    case triples = 0
    /// Each run as three LEB128 varints: its first pseq and first sequence after where the
    /// run before it ended (the first run's from 0), then its count. Differences wrap
    /// (`&-`), so any list round-trips, in order or not; an ordered one is a few bytes a run.
    case deltas = 1

    func pack(_ runs: [ProducerState.Run]) -> Data {
        switch self {
        case .triples: Self.packTriples(runs)
        case .deltas: Self.packDeltas(runs)
        }
    }

    /// The runs in `data`; a truncated last run (a damaged row) is left out.
    func unpack(_ data: Data) -> [ProducerState.Run] {
        switch self {
        case .triples: Self.unpackTriples(data)
        case .deltas: Self.unpackDeltas(data)
        }
    }

    private static func packTriples(_ runs: [ProducerState.Run]) -> Data {
        var data = Data(count: runs.count * 24)
        data.withUnsafeMutableBytes { bytes in
            for (index, run) in runs.enumerated() {
                bytes.storeBytes(of: run.pseq.littleEndian, toByteOffset: index * 24, as: UInt64.self)
                bytes.storeBytes(of: run.sequence.littleEndian, toByteOffset: index * 24 + 8, as: UInt64.self)
                bytes.storeBytes(of: run.count.littleEndian, toByteOffset: index * 24 + 16, as: UInt64.self)
            }
        }
        return data
    }

    private static func unpackTriples(_ data: Data) -> [ProducerState.Run] {
        data.withUnsafeBytes { bytes in
            (0..<bytes.count / 24).map { index in
                let value = { (field: Int) in UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: index * 24 + field * 8, as: UInt64.self)) }
                return ProducerState.Run(pseq: value(0), sequence: value(1), count: value(2))
            }
        }
    }

    private static func packDeltas(_ runs: [ProducerState.Run]) -> Data {
        var writer = VarintWriter(reservingCapacity: runs.count * 6)
        var pseqEnd: UInt64 = 0
        var sequenceEnd: UInt64 = 0
        for run in runs {
            writer.put(run.pseq &- pseqEnd)
            writer.put(run.sequence &- sequenceEnd)
            writer.put(run.count)
            pseqEnd = run.pseq &+ run.count
            sequenceEnd = run.sequence &+ run.count
        }
        return Data(writer.bytes)
    }

    private static func unpackDeltas(_ data: Data) -> [ProducerState.Run] {
        var reader = VarintReader([UInt8](data))
        var runs: [ProducerState.Run] = []
        var pseqEnd: UInt64 = 0
        var sequenceEnd: UInt64 = 0
        while let pseqGap = reader.next(), let sequenceGap = reader.next(), let count = reader.next() {
            let run = ProducerState.Run(pseq: pseqEnd &+ pseqGap, sequence: sequenceEnd &+ sequenceGap, count: count)
            runs.append(run)
            pseqEnd = run.pseq &+ run.count
            sequenceEnd = run.sequence &+ run.count
        }
        return runs
    }
}
