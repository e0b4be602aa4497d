import Foundation
import ReplayModel

/// How a stream ended, if it did.
public enum Terminal: Sendable, Equatable {
    case completed
    case failed(message: String)

    /// Its name where text carries it (the `streams` table, INFO): `completed` or `failed`.
    public var kind: String {
        switch self {
        case .completed: "completed"
        case .failed: "failed"
        }
    }

    /// A failure's message; `nil` for a completion.
    public var message: String? {
        if case .failed(let message) = self { return message }
        return nil
    }

    /// From its `kind` and message; `nil` for an unknown kind (no terminal event).
    public init?(kind: String?, message: String?) {
        switch kind {
        case "completed": self = .completed
        case "failed": self = .failed(message: message ?? "")
        default: return nil
        }
    }
}

/// A stream's metadata: settings, retained window and terminal state.
public struct StreamInfo: Sendable, Equatable {
    public let name: String
    public var config: StreamConfig
    public let createdAt: Date
    /// The lowest retained sequence number; `lastSequence + 1` when nothing is retained.
    public var firstSequence: UInt64
    /// The highest sequence number ever assigned (0 if none); never reused.
    public var lastSequence: UInt64
    /// Payload bytes retained.
    public var byteCount: Int
    public var terminal: Terminal?
    public var terminalAt: Date?
    /// The last writer sequence label a write carried (the next must sort after it, byte-wise).
    public var writerSequence: String? = nil
    /// What it inherits, if it is a fork.
    public var fork: StreamFork? = nil
    /// When it was deleted while forks still read from it; `nil` for a live stream. Such a
    /// stream is out of sight: every command treats it as deleted, but its name stays taken.
    public var deletedAt: Date? = nil
    /// Its scheduled events waiting for their time, and the earliest one's (ms since 1970;
    /// `nil` when none waits). Kept in the stream's row by the writer that schedules and
    /// appends them, so every view reads them without a query.
    public var scheduledCount = 0
    public var nextDue: Int64? = nil
    /// Events removed from inside the window (by their expiry), where the
    /// oldest are removed by retention: holes the stream's count leaves out, and a reader
    /// is told of as gaps.
    public var removedEvents = 0
    /// The highest sequence number removed from inside the window (0: none ever): a copy
    /// of recent events in memory must not serve one at or below it.
    public var removedThrough: UInt64 = 0
    /// A compacted stream's last whole pass (ms since 1970; `nil`: none yet), and the
    /// events compaction has removed from it in all.
    public var compactedAt: Int64? = nil
    public var compactedEvents = 0

    public var isSoftDeleted: Bool { deletedAt != nil }

    /// Events retained: the window less its holes.
    public var eventCount: Int { Int(lastSequence + 1 - firstSequence) - removedEvents }

    /// Where "the last `count` retained events" start (`last=<n>`): `lastSequence + 1`
    /// (nothing) for 0, never before the retained window.
    public func firstSequence(ofLast count: UInt64) -> UInt64 {
        guard count > 0 else { return lastSequence + 1 }
        return max(firstSequence, lastSequence >= count ? lastSequence - count + 1 : 1)
    }

    /// The sequence number the terminal event is replayed with: right after the last value.
    public var terminalSequence: UInt64? { terminal == nil ? nil : lastSequence + 1 }
}

/// A fork's inheritance: its source's events up to `sequence`, read from the source (which
/// may be a fork too), never copied. Its own events are numbered from `sequence + 1`.
public struct StreamFork: Sendable, Equatable {
    public var source: String
    /// The last inherited sequence number.
    public var sequence: UInt64
    /// What its creator asked for: the offset's sequence number and the sub-offset.
    public var requestedSequence: UInt64
    public var requestedSubOffset: UInt64

    public init(source: String, sequence: UInt64, requestedSequence: UInt64, requestedSubOffset: UInt64) {
        self.source = source
        self.sequence = sequence
        self.requestedSequence = requestedSequence
        self.requestedSubOffset = requestedSubOffset
    }
}

/// One stored event.
public struct StoredEvent: Sendable, Equatable {
    public let sequence: UInt64
    /// When the event was committed, as stored: ISO-8601 UTC with milliseconds. Kept as
    /// text because that is what goes on the wire, once per delivery.
    public let timestamp: String
    public let payload: Data
    /// The trace context its publisher gave, if any.
    public let traceParent: TraceParent?
    /// Its link in its stream's hash chain (`nil`: stored before chaining began).
    public let hash: EventHash?
    /// Its key, if its publisher gave one.
    public let key: EventKey?
    /// When it expires (ms since 1970), if it does: from then on it is never served.
    public let expiresAt: Int64?

    public init(
        sequence: UInt64, timestamp: String, payload: Data, traceParent: TraceParent? = nil, hash: EventHash? = nil, key: EventKey? = nil,
        expiresAt: Int64? = nil
    ) {
        self.expiresAt = expiresAt
        self.sequence = sequence
        self.timestamp = timestamp
        self.payload = payload
        self.traceParent = traceParent
        self.hash = hash
        self.key = key
    }

    /// An event as a read hands it over (`EventVisitor`), copied out of the store's buffers.
    public init(
        sequence: UInt64, time: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer, traceParent: UnsafeRawBufferPointer?,
        hash: UnsafeRawBufferPointer?, key: UnsafeRawBufferPointer?
    ) {
        self.init(
            sequence: sequence, timestamp: String(decoding: time, as: UTF8.self), payload: Data(payload),
            traceParent: traceParent.flatMap(TraceParent.init(bytes:)), hash: hash.flatMap(EventHash.init(bytes:)),
            key: key.flatMap(EventKey.init(bytes:)))
    }

    /// When the event was committed (UTC, millisecond precision).
    public var time: Date { Timestamp.parse(timestamp) ?? .distantPast }
}
