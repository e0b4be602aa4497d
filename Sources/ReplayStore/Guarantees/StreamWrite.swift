import Foundation
import ReplayModel

/// One checked write, done as one unit in the writer's transaction: create the stream if
/// asked, check the write's producer stamp and writer sequence label, append its events
/// (all or none, contiguous), and close the stream if asked. Its checks, its events and its
/// close commit together or not at all.
public struct StreamWrite: Sendable {
    public var stream: String
    /// The events, in order (a JSON array is several; an empty list only closes or creates).
    public var payloads: [Data]
    /// Create the stream with these settings if it does not exist (`PUT`); `nil`: it must.
    public var create: StreamConfig?
    /// One stamp for the whole write: it numbers writes, not events.
    public var producer: ProducerStamp?
    /// The writer's own sequence label: must sort after the stream's last one, byte-wise.
    public var writerSequence: String?
    /// Close (complete) the stream after the events.
    public var close: Bool
    /// With `create`: make the new stream a fork of another.
    public var fork: ForkRequest?
    /// With `create`: who creates it, recorded in its row, and the cap on their streams.
    public var creator: StreamCreator?
    /// The publisher's trace context, stored with each of the write's events.
    public var traceParent: TraceParent?
    /// The key of each of the write's events (`Replay-Key`).
    public var key: EventKey?
    /// How long each of the write's events lives (`Replay-TTL`); `nil`: the stream's default.
    public var ttl: EventTTL?

    public init(
        stream: String, payloads: [Data], create: StreamConfig? = nil, producer: ProducerStamp? = nil,
        writerSequence: String? = nil, close: Bool = false, fork: ForkRequest? = nil
    ) {
        self.fork = fork
        self.stream = stream
        self.payloads = payloads
        self.create = create
        self.producer = producer
        self.writerSequence = writerSequence
        self.close = close
    }
}

/// Who creates a stream (a scoped token's subject), and how many streams they may have
/// created and not deleted (`nil`: any number). Checked in the writer's batch, so that
/// one daemon's concurrent creations cannot pass the cap together.
public struct StreamCreator: Sendable, Equatable {
    public var name: String
    public var limit: Int?

    public init(name: String, limit: Int?) {
        self.name = name
        self.limit = limit
    }
}

/// A fork to create: a new stream that reads another's events up to a point, then its own.
public struct ForkRequest: Sendable, Equatable {
    public var source: String
    /// Inherit the source's events up to this sequence number; `nil`: its last.
    public var sequence: UInt64?
    /// Further inheritance past `sequence`: whole events where `subOffsetCountsEvents`
    /// (JSON messages), else payload bytes of the next event (a part of it becomes the
    /// fork's own first event).
    public var subOffset: UInt64
    public var subOffsetCountsEvents: Bool

    public init(source: String, sequence: UInt64?, subOffset: UInt64 = 0, subOffsetCountsEvents: Bool = false) {
        self.source = source
        self.sequence = sequence
        self.subOffset = subOffset
        self.subOffsetCountsEvents = subOffsetCountsEvents
    }
}

/// What a `StreamWrite` did.
public enum StreamWriteOutcome: Sendable, Equatable {
    /// The stream was created by this write (with its events, closed if asked).
    case created(StreamInfo)
    /// It existed and `create` was set: nothing was written; the caller compares settings.
    case existing(StreamInfo)
    /// The events were appended (and the stream closed if asked).
    case appended(StreamInfo)
    /// A close-only write to a stream that was already closed: nothing changed.
    case alreadyClosed(StreamInfo)
    /// The producer's stamp was already committed: nothing was written again.
    /// `lastProducerSequence` is the highest pseq the producer has committed in its epoch.
    case duplicate(StreamInfo, lastProducerSequence: UInt64)

    /// For a duplicate, the producer's highest committed pseq.
    public var producerSequence: UInt64? {
        if case .duplicate(_, let last) = self { return last }
        return nil
    }
}
