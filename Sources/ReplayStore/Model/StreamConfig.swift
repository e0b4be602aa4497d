import Foundation
import ReplayModel

/// The settings of a stream: its retention (the replay subject's capacity, plus optional
/// byte and age limits, like NATS JetStream's MaxMsgs, MaxBytes and MaxAge) and its source.
public struct StreamConfig: Sendable, Equatable {
    /// The most events kept; `nil` keeps all. `0` keeps none: a plain hot subject whose
    /// subscribers only see what is published while they listen.
    public var capacity: Int?
    /// The most payload bytes kept; the oldest events go first. `nil`: no limit.
    public var maxBytes: Int?
    /// Events older than this many seconds are removed. `nil`: no limit.
    public var maxAge: TimeInterval?
    /// An upstream command whose output becomes the stream's events.
    public var source: StreamSource?
    /// The MIME type of its events, as its creator declared it; `nil` when none was
    /// declared (the events are then plain bytes).
    public var contentType: String?
    /// When the whole stream goes away, if it does.
    public var expiry: StreamExpiry?
    /// Retention that waits for the stream's consumer groups: capacity, byte and age limits
    /// do not remove an event a group has not acknowledged, keeping up to this many events
    /// beyond them (the hard bound: a dead group cannot fill the disk). `nil`: the limits
    /// apply whatever the groups have done.
    public var keepUnacked: Int?
    /// How long an event lives when its publish does not say (`ttl=`), in seconds: past it,
    /// it is never served, and the retention pass removes it. `nil`: events live until
    /// retention's limits remove them.
    public var eventTTL: TimeInterval?
    /// Keeps each key's newest event and removes those a newer one superseded; `nil`: every
    /// event stays as long as the limits above allow.
    public var compaction: KeyCompaction?

    public init(
        capacity: Int?, maxBytes: Int? = nil, maxAge: TimeInterval? = nil, source: StreamSource? = nil,
        contentType: String? = nil, expiry: StreamExpiry? = nil, keepUnacked: Int? = nil, eventTTL: TimeInterval? = nil,
        compaction: KeyCompaction? = nil
    ) {
        self.keepUnacked = keepUnacked
        self.eventTTL = eventTTL
        self.compaction = compaction
        self.capacity = capacity
        self.maxBytes = maxBytes
        self.maxAge = maxAge
        self.source = source
        self.contentType = contentType
        self.expiry = expiry
    }

    /// Keeps everything.
    public static var unlimited: StreamConfig { StreamConfig(capacity: nil) }

    /// The longest time-to-live (100 years): a deadline is counted in milliseconds in 64 bits.
    public static let maxTimeToLive = 100 * 365 * 86_400

    func validate() throws(StoreError) {
        if let capacity, capacity < 0 { throw .invalidConfig("capacity must be 0 or more, or unlimited") }
        if let maxBytes, maxBytes < 0 { throw .invalidConfig("max bytes must be 0 or more") }
        if let maxAge, !(maxAge > 0) { throw .invalidConfig("max age must be more than 0 seconds") }
        if let keepUnacked, keepUnacked < 0 { throw .invalidConfig("keep_unacked must be 0 or more") }
        if let eventTTL, EventTTL(seconds: eventTTL) == nil { throw .invalidConfig(EventTTL.rangeMessage) }
        if let compaction, !(0...Double(Self.maxTimeToLive)).contains(compaction.tombstoneRetention) {
            throw .invalidConfig("tombstone_retention is 0 to \(Self.maxTimeToLive) seconds")
        }
        if let source, source.command.isEmpty { throw .invalidConfig("a source needs a command") }
        if case .idle(let seconds) = expiry, !(0...Self.maxTimeToLive).contains(seconds) {
            throw .invalidConfig("a time-to-live must be 0 to \(Self.maxTimeToLive) seconds")
        }
    }
}

/// When a stream is deleted as a whole (after a time without use, or at a given time),
/// unlike retention, which trims its oldest events.
public enum StreamExpiry: Sendable, Equatable {
    /// After this many seconds without a read or a write.
    case idle(seconds: Int)
    /// At this time (millisecond precision).
    case at(Date)

    public var idleSeconds: Int? {
        if case .idle(let seconds) = self { return seconds }
        return nil
    }

    var deadline: Date? {
        if case .at(let date) = self { return date }
        return nil
    }
}

/// A command whose standard output becomes a stream's events, and when to run it.
public struct StreamSource: Sendable, Equatable {
    /// When the source is connected, after the core's conversions.
    public enum ConnectMode: String, Sendable, CaseIterable {
        /// As `replay()`: when the stream is created and whenever the daemon starts.
        case eager
        /// As `replayLazily()`: on the first subscriber, then it stays connected.
        case lazy
        /// As `autoconnect()`: while anyone subscribes.
        case refcount
    }

    public var command: String
    public var connect: ConnectMode
    /// Framing, restart policy, grace; kept as their JSON object.
    public var options: SourceOptions

    public init(command: String, connect: ConnectMode, options: SourceOptions = SourceOptions()) {
        self.command = command
        self.connect = connect
        self.options = options
    }
}
