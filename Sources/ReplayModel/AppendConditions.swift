/// What a publish asks beyond "append" (on the wire: `expect=`, `producer= epoch= pseq=`).
/// The store checks them inside the writer's transaction, against each stream as the
/// earlier requests of the same batch left it; they need no lock of their own: the writer
/// owns every stream's last sequence number. One type for the wire, the clients and the
/// store, so a check means the same thing at every layer.
///
/// It also carries the three things a publish may add to its event besides the payload, its
/// key (`key=`), its trace context (`trace=`) and its time-to-live (`ttl=`): not checks, but
/// they travel the same path,
/// and a PUB with no options at all stays on the plain path (`ClientCommand.publish`)
/// either way.
public struct AppendConditions: Sendable, Equatable {
    /// Commit only if the stream's last sequence number is this (0: the stream is empty or
    /// new); otherwise the publish fails (`wrong_last_seq`), and nothing is stored.
    public var expectedLastSequence: UInt64? {
        get { expected == Self.noExpectation ? nil : expected }
        set { expected = newValue ?? Self.noExpectation }
    }
    /// `expectedLastSequence`, with `UInt64.max` for none (no stream reaches it: a
    /// stream's numbers end at 2^40): a `UInt64?` took 16 bytes with its padding, and
    /// every PUB copies these (`ClientCommandSizeTests`, `WriteRequestSizeTests`).
    private var expected: UInt64 = Self.noExpectation
    private static let noExpectation = UInt64.max
    /// An idempotent producer's stamp: a retry of a committed stamp is answered with the
    /// sequence number it got, and not stored again.
    public var producer: ProducerStamp?
    /// The publisher's trace context, stored with the event.
    public var traceParent: TraceParent? {
        get { annotations?.traceParent }
        set { annotations = Annotations.of(traceParent: newValue, key: key, ttl: ttl) }
    }
    /// The event's key, stored with it.
    public var key: EventKey? {
        get { annotations?.key }
        set { annotations = Annotations.of(traceParent: traceParent, key: newValue, ttl: ttl) }
    }
    /// How long the event lives (`ttl=`); `nil`: its stream's default, if it has one.
    public var ttl: EventTTL? {
        get { annotations?.ttl }
        set { annotations = Annotations.of(traceParent: traceParent, key: key, ttl: newValue) }
    }
    /// The trace context, the key and the time-to-live in one reference, `nil` when there
    /// are none: each alone took 8 bytes, and with two the decoder's command passed a plain
    /// publish's size (`ClientCommandSizeTests`). A PUB that carries any already allocates.
    private var annotations: Annotations?

    private final class Annotations: Sendable, Equatable {
        let traceParent: TraceParent?
        let key: EventKey?
        let ttl: EventTTL?

        /// `nil` for none. (Not a failable initializer: a class's allocates its object
        /// before it can return `nil`, and every PUB builds empty conditions.)
        static func of(traceParent: TraceParent?, key: EventKey?, ttl: EventTTL?) -> Annotations? {
            guard traceParent != nil || key != nil || ttl != nil else { return nil }
            return Annotations(traceParent: traceParent, key: key, ttl: ttl)
        }

        private init(traceParent: TraceParent?, key: EventKey?, ttl: EventTTL?) {
            self.traceParent = traceParent
            self.key = key
            self.ttl = ttl
        }

        static func == (lhs: Annotations, rhs: Annotations) -> Bool {
            lhs.traceParent == rhs.traceParent && lhs.key == rhs.key && lhs.ttl == rhs.ttl
        }
    }

    public static let none = AppendConditions()

    public init(
        expectedLastSequence: UInt64? = nil, producer: ProducerStamp? = nil, traceParent: TraceParent? = nil, key: EventKey? = nil,
        ttl: EventTTL? = nil
    ) {
        self.expectedLastSequence = expectedLastSequence
        self.producer = producer
        self.annotations = Annotations.of(traceParent: traceParent, key: key, ttl: ttl)
    }
}

/// An idempotent producer's identity and position, on the Durable Streams protocol's model:
/// `id` names the producer, `epoch` rises when it restarts (fencing older instances), and
/// `sequence` (pseq) numbers its publishes within an epoch from 0.
public struct ProducerStamp: Sendable, Hashable {
    public var id: String
    public var epoch: UInt64
    public var sequence: UInt64

    public init(id: String, epoch: UInt64, sequence: UInt64) {
        self.id = id
        self.epoch = epoch
        self.sequence = sequence
    }
}
