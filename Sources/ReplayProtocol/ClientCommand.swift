import NIOCore
import ReplayModel

/// Where a subscription starts reading its stream.
public enum StartPosition: Sendable, Equatable {
    /// Everything retained, then live: the replay-subject behaviour. The default.
    case all
    /// Only events published after the subscription.
    case new
    /// From this sequence number, inclusive.
    case from(UInt64)
    /// The last N retained events, then live.
    case last(UInt64)
    /// The first retained event stored at or after this time (seconds since 1970), then live.
    case since(Double)
    /// The current event of every key (the newest retained event of each, tombstones left
    /// out), in sequence order, then live: a plain SUB of one stream only.
    case snapshot
}

/// DERIVE's words beside its definition: the derived stream's capacity if it is new, and
/// whether a different definition recomputes it (`rebuild`) rather than being refused.
public struct DeriveOptions: Sendable, Equatable {
    public var capacity: CreateOptions.Capacity?
    public var rebuild: Bool

    public init(capacity: CreateOptions.Capacity? = nil, rebuild: Bool = false) {
        self.capacity = capacity
        self.rebuild = rebuild
    }

    var words: [String] {
        (capacity.map { ["capacity=\($0.wireText)"] } ?? []) + (rebuild ? ["rebuild"] : [])
    }
}

/// The settings of `CREATE`, as sent on the wire.
public struct CreateOptions: Sendable, Equatable {
    /// `nil`: the server's default capacity. Otherwise a count, or `.unlimited`.
    public var capacity: Capacity?
    public var maxBytes: Int?
    public var maxAge: Double?
    /// Events kept beyond the limits while a consumer group has not acknowledged them.
    public var keepUnacked: Int?
    /// How long its events live when a publish does not say (`event_ttl=`), in seconds.
    public var eventTTL: Double?
    /// Key compaction (`compact=yes`): each key keeps its newest event.
    public var compact: Bool
    /// How long a compacted stream keeps a key's tombstone (`tombstone_retention=`), in
    /// seconds; `nil`: the daemon's default (a day).
    public var tombstoneRetention: Double?
    public var source: String?
    public var connect: String?

    /// When a source runs if `connect=` is not given: for its first subscriber, once.
    public static let defaultConnect = "lazy"
    /// Source options (`SourceOptions.Key`: framing, restart policy…) as given, for
    /// example `framing=lines`; the daemon reads them as `SourceOptions`.
    public var sourceOptions: [String: String]

    public enum Capacity: Sendable, Equatable {
        case count(Int)
        case unlimited

        /// `unlimited`, or a count of 0 or more: as CREATE, `replayctl create --capacity`
        /// and `replayd --default-capacity` take it.
        public init?(_ text: String) {
            if text.lowercased() == "unlimited" {
                self = .unlimited
            } else if let count = Int(text), count >= 0 {
                self = .count(count)
            } else {
                return nil
            }
        }

        /// As `init(_:)` reads it: the count, or `unlimited`.
        public var wireText: String {
            switch self {
            case .count(let count): "\(count)"
            case .unlimited: "unlimited"
            }
        }

        /// The count; `nil` for unlimited.
        public var limit: Int? {
            if case .count(let count) = self { return count }
            return nil
        }
    }

    public init(
        capacity: Capacity? = nil, maxBytes: Int? = nil, maxAge: Double? = nil,
        source: String? = nil, connect: String? = nil, sourceOptions: [String: String] = [:], keepUnacked: Int? = nil,
        eventTTL: Double? = nil, compact: Bool = false, tombstoneRetention: Double? = nil
    ) {
        self.keepUnacked = keepUnacked
        self.eventTTL = eventTTL
        self.compact = compact
        self.tombstoneRetention = tombstoneRetention
        self.capacity = capacity
        self.maxBytes = maxBytes
        self.maxAge = maxAge
        self.source = source
        self.connect = connect
        self.sourceOptions = sourceOptions
    }
}

/// What a group SUB names after `group=`: its group, the member, the member's limit, and
/// the settings it creates the group with (or must agree with to join it).
public struct GroupOptions: Sendable, Equatable {
    public var group: String
    /// The member's id; a SUB without one is a member of its own (its connection and sid).
    public var member: String?
    /// Seconds a member holds an event before it goes to another.
    public var ackWait: Double?
    public var maxDeliver: Int?
    public var deadLetter: String?
    /// How many events this member holds at most, unacknowledged. 0: a member that is handed
    /// nothing and only acknowledges or gives back, by its id, what another connection of the
    /// same member holds (an operator's `replayctl ack`).
    public var maxPending: Int?

    /// When a SUB names no `max_pending`: enough to keep a worker busy between round trips,
    /// few enough that a dead member's events go back quickly. Redis's XREADGROUP and
    /// JetStream's pull consumers let the reader choose too (COUNT, batch).
    public static let defaultMaxPending = 64
    public static let maxPendingLimit = 10_000
    /// The largest flow-control window a SUB may ask for, and the most one MORE may grant.
    public static let maxWindow = 1_000_000

    public init(
        group: String, member: String? = nil, ackWait: Double? = nil, maxDeliver: Int? = nil, deadLetter: String? = nil,
        maxPending: Int? = nil
    ) {
        self.group = group
        self.member = member
        self.ackWait = ackWait
        self.maxDeliver = maxDeliver
        self.deadLetter = deadLetter
        self.maxPending = maxPending
    }
}

/// A command a client sends. See docs/PROTOCOL.md for the grammar.
///
/// Each PUB is one of these, handed from the decoder to the connection, so the rare cases
/// that would make every value large (a group's options, a stream's settings) are boxed
/// (`indirect`): the enum is then a publish's size.
public enum ClientCommand: Sendable, Equatable {
    case publish(stream: String, payload: ByteBuffer)
    /// A PUB with `expect=` or producer fields.
    case publishChecked(stream: String, payload: ByteBuffer, checks: AppendConditions)
    /// A PUB with `delay=` or `at=`: stored now, appended when it falls due. `annotations`
    /// holds its key and trace context (a scheduled PUB takes no checks). Boxed: rare, and
    /// larger than a plain PUB.
    indirect case schedule(stream: String, payload: ByteBuffer, due: DueTime, annotations: AppendConditions)
    /// A stream's pending scheduled events, earliest due first, as JSON.
    case scheduled(stream: String, limit: Int)
    /// Cancels a pending scheduled event.
    case unschedule(stream: String, id: Int64)
    /// `ATOMIC <n>` and the n PUBs after it: all commit or none.
    case atomic([AtomicEvent])
    case subscribe(stream: String, sid: String, start: StartPosition)
    /// A subscription to every stream the pattern matches, now or later (`StreamPattern`).
    case subscribePattern(pattern: StreamPattern, sid: String, start: StartPosition)
    /// A durable consumer's subscription: after its acknowledged position, or from `start`
    /// on first use.
    case subscribeDurable(stream: String, sid: String, start: StartPosition, consumer: String)
    /// A member of a consumer group: each event of the stream goes to one member at a time.
    indirect case subscribeGroup(stream: String, sid: String, start: StartPosition, options: GroupOptions)
    /// A member of the group of that name on every stream the pattern matches, now or later.
    indirect case subscribePatternGroup(pattern: StreamPattern, sid: String, start: StartPosition, options: GroupOptions)
    /// A SUB of one stream (plain or durable) with flow control: the daemon sends at most
    /// `window` events on it before the client grants more with `MORE` (a credit window,
    /// as HTTP/2's and JetStream pull consumers'), so a slow reader of one subscription holds
    /// back only its own events. Written `SUB … window=<n>`.
    indirect case windowed(ClientCommand, window: Int)
    /// A SUB of one stream (plain, durable or windowed) whose events pass through a jq
    /// program on the way out (`filter=<bytes>`, the program as its payload): nothing is
    /// stored, and sequence numbers stay the stream's.
    indirect case filtered(ClientCommand, program: String)
    /// A SUB of one stream (plain, durable or windowed) whose events carry their
    /// hash-chain link (`hash=on`: ` hash=<64 hex>` at the end of each `EVENT` line).
    indirect case hashed(ClientCommand)
    /// Grants a windowed subscription `count` more events.
    case more(sid: String, count: Int)
    case unsubscribe(sid: String)
    /// Acknowledges every event up to `sequence` for a durable subscription; for a group
    /// member, that one event (`stream` names its stream on a pattern group).
    case ack(sid: String, sequence: UInt64, stream: String? = nil)
    /// A group member gives an event back, to be handed out again after `delay` seconds.
    case nack(sid: String, sequence: UInt64, stream: String? = nil, delay: Double? = nil)
    /// The stream's consumer groups, as JSON.
    case groups(stream: String)
    /// A group's pending events, as JSON.
    case pending(stream: String, group: String)
    case deleteGroup(stream: String, group: String)
    case consumers(stream: String)
    /// The Durable Streams subscriptions, with their positions and leases, as JSON.
    case subscriptions
    case deleteConsumer(stream: String, name: String)
    indirect case create(stream: String, options: CreateOptions)
    case delete(stream: String)
    case info(stream: String)
    /// The newest event of a key in a stream (`GET <stream> <key>`), as JSON.
    case latest(stream: String, key: EventKey)
    case list
    case complete(stream: String)
    case fail(stream: String, message: String)
    case reset(stream: String, keepHistory: Bool)
    /// A derived stream defined (created, confirmed or rebuilt): `definition` is a
    /// `DerivationSpec` as JSON, the command's payload.
    indirect case derive(stream: String, definition: String, options: DeriveOptions)
    /// Every derivation with its inputs, lag, rate and status.
    case derivations
    /// A consistent copy of the daemon's SQLite file written to `path` (absolute, on the
    /// daemon's host, to no file yet) while it keeps serving.
    case backup(path: String)
    /// Each named stream's hash chain recomputed (every stream's when `streams` is
    /// empty; a name may be a pattern): a list of `ChainReport`s. `through`: only up to
    /// that event (one stream; what a checkpoint of it is checked against).
    case verify(streams: [String], through: UInt64? = nil)
    case ping

    /// The verb, as written on the wire.
    public var verb: String {
        switch self {
        case .publish, .publishChecked, .schedule: "PUB"
        case .scheduled: "SCHEDULED"
        case .unschedule: "UNSCHEDULE"
        case .atomic: "ATOMIC"
        case .subscribe, .subscribePattern, .subscribeDurable, .subscribeGroup, .subscribePatternGroup: "SUB"
        case .windowed, .filtered, .hashed: "SUB"
        case .more: "MORE"
        case .unsubscribe: "UNSUB"
        case .ack: "ACK"
        case .nack: "NACK"
        case .groups: "GROUPS"
        case .pending: "PENDING"
        case .deleteGroup: "DELGROUP"
        case .consumers: "CONSUMERS"
        case .subscriptions: "SUBSCRIPTIONS"
        case .deleteConsumer: "DELCONSUMER"
        case .create: "CREATE"
        case .delete: "DELETE"
        case .info: "INFO"
        case .latest: "GET"
        case .list: "LIST"
        case .complete: "COMPLETE"
        case .fail: "FAIL"
        case .reset: "RESET"
        case .derive: "DERIVE"
        case .derivations: "DERIVATIONS"
        case .backup: "BACKUP"
        case .verify: "VERIFY"
        case .ping: "PING"
        }
    }

    /// The bytes of the events it carries (what a byte rate counts).
    public var payloadBytes: Int {
        switch self {
        case .publish(_, let payload), .publishChecked(_, let payload, _), .schedule(_, let payload, _, _): payload.readableBytes
        case .atomic(let events): events.reduce(0) { $0 + $1.payload.readableBytes }
        default: 0
        }
    }
}
