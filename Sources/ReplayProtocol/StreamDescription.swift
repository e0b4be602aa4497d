/// A stream as INFO and LIST describe it (JSON, snake_case keys).
public struct StreamDescription: Codable, Sendable, Equatable {
    public var name: String
    /// `nil`: unlimited.
    public var capacity: Int?
    public var maxBytes: Int?
    public var maxAge: Double?
    public var createdAt: String
    public var firstSeq: UInt64
    public var lastSeq: UInt64
    public var count: Int
    public var bytes: Int
    /// `completed`, `failed`, or `nil` while the stream is open.
    public var terminal: String?
    public var terminalMessage: String?
    public var subscribers: Int
    /// The upstream command, if the stream has one.
    public var source: SourceDescription?
    /// Events kept beyond the limits while a consumer group has not acknowledged them;
    /// `nil`: the limits apply whatever the groups have done.
    public var keepUnacked: Int?
    /// How long its events live when their publish does not say, in seconds; `nil`: no
    /// default (or a daemon that does not say).
    public var eventTTL: Double?
    /// Events delivered from the stream to readers on this daemon since it started (both
    /// doors): its change over time is the delivery rate (`replayctl top`, the live view).
    /// `nil` from a daemon that does not say.
    public var delivered: Int?
    /// A derived stream's derivation: inputs, lag, rate, errors, status.
    public var derivation: DerivationDescription?
    /// INFO only: how many keys have a current value (a retained newest event that is not
    /// a tombstone), counted up to `keysCounted`; `nil` in LIST.
    public var keys: Int?
    /// How many scheduled events wait for their time, and the next one's (`nil` when none
    /// waits; both `nil` from a daemon that does not say).
    public var scheduled: Int?
    public var nextDue: String?
    /// A compacted stream's compaction; `nil` for a stream that keeps every event.
    public var compaction: CompactionDescription?

    /// The most keys INFO counts: one index lookup or three each, so an INFO of a stream
    /// of millions of keys stays quick.
    public static let keysCounted = 100_000

    public init(
        name: String, capacity: Int?, maxBytes: Int?, maxAge: Double?, createdAt: String,
        firstSeq: UInt64, lastSeq: UInt64, count: Int, bytes: Int,
        terminal: String?, terminalMessage: String?, subscribers: Int, source: SourceDescription? = nil, keepUnacked: Int? = nil,
        delivered: Int? = nil, derivation: DerivationDescription? = nil
    ) {
        self.delivered = delivered
        self.derivation = derivation
        self.keepUnacked = keepUnacked
        self.name = name
        self.capacity = capacity
        self.maxBytes = maxBytes
        self.maxAge = maxAge
        self.createdAt = createdAt
        self.firstSeq = firstSeq
        self.lastSeq = lastSeq
        self.count = count
        self.bytes = bytes
        self.terminal = terminal
        self.terminalMessage = terminalMessage
        self.subscribers = subscribers
        self.source = source
    }

    enum CodingKeys: String, CodingKey {
        case name, capacity, count, bytes, terminal, subscribers, source, delivered, derivation, keys, scheduled, compaction
        case nextDue = "next_due"
        case maxBytes = "max_bytes"
        case maxAge = "max_age"
        case createdAt = "created_at"
        case firstSeq = "first_seq"
        case lastSeq = "last_seq"
        case terminalMessage = "terminal_message"
        case keepUnacked = "keep_unacked"
        case eventTTL = "event_ttl"
    }

    public func encode(to encoder: any Encoder) throws {
        // Explicit nulls: a reader sees every field, "capacity": null meaning unlimited.
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(capacity, forKey: .capacity)
        try container.encode(maxBytes, forKey: .maxBytes)
        try container.encode(maxAge, forKey: .maxAge)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(firstSeq, forKey: .firstSeq)
        try container.encode(lastSeq, forKey: .lastSeq)
        try container.encode(count, forKey: .count)
        try container.encode(bytes, forKey: .bytes)
        try container.encode(terminal, forKey: .terminal)
        try container.encode(terminalMessage, forKey: .terminalMessage)
        try container.encode(subscribers, forKey: .subscribers)
        try container.encode(source, forKey: .source)
        try container.encode(keepUnacked, forKey: .keepUnacked)
        try container.encodeIfPresent(eventTTL, forKey: .eventTTL)
        try container.encode(delivered, forKey: .delivered)
        try container.encodeIfPresent(derivation, forKey: .derivation)
        try container.encodeIfPresent(keys, forKey: .keys)
        try container.encodeIfPresent(scheduled, forKey: .scheduled)
        try container.encodeIfPresent(nextDue, forKey: .nextDue)
        try container.encodeIfPresent(compaction, forKey: .compaction)
    }
}

/// A compacted stream's compaction as INFO and LIST describe it.
public struct CompactionDescription: Codable, Sendable, Equatable {
    /// How long a key's tombstone stays once it is the key's newest event, in seconds.
    public var tombstoneRetention: Double
    /// When its last whole pass ended (ISO-8601); `nil`: none yet.
    public var lastRun: String?
    /// Events compaction has removed from the stream in all.
    public var removed: Int

    enum CodingKeys: String, CodingKey {
        case removed
        case tombstoneRetention = "tombstone_retention"
        case lastRun = "last_run"
    }

    public init(tombstoneRetention: Double, lastRun: String?, removed: Int) {
        self.tombstoneRetention = tombstoneRetention
        self.lastRun = lastRun
        self.removed = removed
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(tombstoneRetention, forKey: .tombstoneRetention)
        try container.encode(lastRun, forKey: .lastRun)
        try container.encode(removed, forKey: .removed)
    }
}

/// A stream's source as INFO describes it.
public struct SourceDescription: Codable, Sendable, Equatable {
    public var command: String
    /// `eager`, `lazy` or `refcount`.
    public var connect: String
    public var framing: String
    public var restart: String
    /// `not connected`, `running`, `restarting`, `stopped`, `completed` or `failed`; a
    /// scheduled source between its runs, `waiting`.
    public var state: String
    public var pid: Int32?
    /// Runs started since the daemon started.
    public var starts: Int
    /// Why it failed, or (running, restarting, stopped) why its last run failed.
    public var reason: String?
    /// A scheduled source's cron schedule, and its next tick (ISO-8601); `nil` otherwise.
    public var schedule: String?
    public var nextRun: String?

    enum CodingKeys: String, CodingKey {
        case command, connect, framing, restart, state, pid, starts, reason, schedule
        case nextRun = "next_run"
    }

    public init(command: String, connect: String, framing: String, restart: String, state: String, pid: Int32?, starts: Int, reason: String?) {
        self.command = command
        self.connect = connect
        self.framing = framing
        self.restart = restart
        self.state = state
        self.pid = pid
        self.starts = starts
        self.reason = reason
    }
}

/// A durable consumer as CONSUMERS describes it.
public struct ConsumerDescription: Codable, Sendable, Equatable {
    public var name: String
    /// Every event up to this one is acknowledged.
    public var ackedSeq: UInt64
    /// Events committed after the acknowledged position.
    public var lag: UInt64
    public var createdAt: String
    public var updatedAt: String

    public init(name: String, ackedSeq: UInt64, lag: UInt64, createdAt: String, updatedAt: String) {
        self.name = name
        self.ackedSeq = ackedSeq
        self.lag = lag
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    enum CodingKeys: String, CodingKey {
        case name, lag
        case ackedSeq = "acked_seq"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }
}
