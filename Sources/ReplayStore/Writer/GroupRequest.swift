import ReplayModel
import Synchronization

/// What a consumer group's members ask of the writer (`WriteRequest.group`). Each is a
/// write, committed with the batch like a publish: a hand-out is remembered before any
/// member sees its events, and an ACK's answer comes after its commit.
public enum GroupRequest: Sendable {
    public typealias Completion<T> = @Sendable (Result<T, StoreError>) -> Void

    /// SUB … group=: the group, created with the settings asked at `first`
    /// on first use; a later SUB asking for other settings is refused.
    case join(group: String, asked: GroupSettings.Asked, first: FirstPosition, Completion<GroupJoined>)
    /// Up to `limit` events for `member`. Events that reached their group's `maxDeliver` go
    /// to its dead-letter stream (created with `deadLetterConfig` if it does not exist).
    /// With a ticket, a hand-out that would give nothing waits instead (`WaitingMembers`)
    /// and is answered by the first commit that gives it something, or tells it that its
    /// stream ended and the group is drained; `stopWaiting` ends the wait.
    /// With a reader, a store that reads cheaply inside its transaction (SQLite) gives it
    /// the given events too (`GroupHandout.read`), so the member need not read them again.
    case handOut(
        group: String, member: String, limit: Int, deadLetterConfig: StreamConfig, wait: WaitTicket?, read: HandoutReader? = nil,
        Completion<GroupHandout>)
    /// The member waiting with this ticket is gone (its subscription ended): its hand-out is
    /// answered with nothing, if it is still waiting.
    case stopWaiting(WaitTicket)
    /// ACKs of one member, one or a burst read together: each is decided on its own (a
    /// refused one changes nothing and the rest still count), answered with one result per
    /// sequence number, in order. A worker acknowledges a burst of events at once, and as
    /// one request they cost the writer one lookup of the group instead of one each.
    case acknowledge(group: String, member: String, sequences: [UInt64], Completion<[Result<Void, StoreError>]>)
    case giveBack(group: String, member: String, sequence: UInt64, delayMillis: Int64, deadLetterConfig: StreamConfig, Completion<Void>)
    /// The member left: what it held is free for the others at once.
    case leave(group: String, member: String, Completion<Void>)
    case delete(group: String, Completion<Void>)

    func fail(_ error: StoreError) {
        switch self {
        case .join(_, _, _, let done): done(.failure(error))
        case .handOut(_, _, _, _, _, _, let done): done(.failure(error))
        case .stopWaiting: break
        case .acknowledge(_, _, _, let done): done(.failure(error))
        case .giveBack(_, _, _, _, _, let done), .leave(_, _, let done), .delete(_, let done):
            done(.failure(error))
        }
    }
}

/// A member's view of its group once it joined: its settings (the first SUB's), and
/// whether this SUB created it.
public struct GroupJoined: Sendable, Equatable {
    public let settings: GroupSettings
    public let created: Bool
}

/// What one hand-out gave a member.
public struct GroupHandout: Sendable {
    /// The events given, in sequence order, with their delivery counts.
    public let given: [(sequence: UInt64, deliveries: Int)]
    /// How many events the member holds now, these included.
    public let held: Int
    /// Events retention removed before the group handed them out (see `ConsumerGroup`).
    public let skipped: ClosedRange<UInt64>?
    /// When something changes without a request (a held event's time runs out, a
    /// given-back event's delay ends), in ms since 1970; `nil`: nothing pending.
    public let nextDue: Int64?
    /// Whether the stream has ended and the group has handed out all of it and has nothing
    /// pending: its members' work is done.
    public let finished: Bool
    /// How many of `given`, from the first, went to the hand-out's reader.
    public var read = 0

    /// The answer to a member that stopped waiting: nothing.
    static let nothing = GroupHandout(given: [], held: 0, skipped: nil, nextDue: nil, finished: false)

    /// Whether this answers a member that waits for work: it was given some, or told of a
    /// gap, or its work is done.
    var answersWaiter: Bool { !given.isEmpty || skipped != nil || finished }
}

/// Names one waiting hand-out (`GroupRequest.handOut(wait:)`), unique in the process.
public struct WaitTicket: Hashable, Sendable {
    let id: UInt64

    private static let last = Atomic<UInt64>(0)

    public init() {
        id = Self.last.add(1, ordering: .relaxed).newValue
    }
}

/// Takes a hand-out's events as the writer reads them, on the writer's thread, before the
/// commit (a failed commit answers the hand-out with its error: what was read then goes
/// nowhere): each event's sequence number, time text, payload, trace context, hash-chain
/// link and key, in sequence order, up to `byteBudget` bytes of payload (at least one event). A
/// member then sends events from the pages its hand-out's own commit just wrote, where
/// reading them again was a read transaction on a reader thread and two more thread hops
/// per hand-out.
public struct HandoutReader: Sendable {
    public let byteBudget: Int
    public typealias Take =
        @Sendable (
            _ sequence: UInt64, _ time: UnsafeRawBufferPointer, _ payload: UnsafeRawBufferPointer, _ traceParent: UnsafeRawBufferPointer?,
            _ hash: UnsafeRawBufferPointer?, _ key: UnsafeRawBufferPointer?
        ) -> Void
    public let take: Take

    public init(byteBudget: Int, take: @escaping Take) {
        self.byteBudget = byteBudget
        self.take = take
    }
}
