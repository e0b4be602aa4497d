/// What a consumer group's members agree on; the first SUB of the group sets it, and a
/// later SUB that asks for something else is refused, naming the setting.
public struct GroupSettings: Sendable, Equatable {
    /// How long a member holds an event before it is handed to another (ms).
    public var ackWaitMillis: Int64
    /// Deliveries after which an unacknowledged event goes to `deadLetter`; `nil`:
    /// delivered again for ever.
    public var maxDeliver: Int?
    /// The stream that failed events are appended to.
    public var deadLetter: String?

    public static let defaultAckWaitMillis: Int64 = 30_000

    /// What a SUB asks for: the settings it names. A group is created with these (the rest
    /// at their defaults), and joined by a SUB that names none of them differently.
    public struct Asked: Sendable, Equatable {
        public var ackWaitMillis: Int64?
        public var maxDeliver: Int?
        public var deadLetter: String?

        public init(ackWaitMillis: Int64? = nil, maxDeliver: Int? = nil, deadLetter: String? = nil) {
            self.ackWaitMillis = ackWaitMillis
            self.maxDeliver = maxDeliver
            self.deadLetter = deadLetter
        }

        /// The settings of a group this creates.
        public var settings: GroupSettings {
            GroupSettings(ackWaitMillis: ackWaitMillis ?? GroupSettings.defaultAckWaitMillis, maxDeliver: maxDeliver, deadLetter: deadLetter)
        }
    }

    /// The first setting `asked` names differently, in SUB's words: (setting, the group's,
    /// the asked).
    public func conflict(with asked: Asked) -> (setting: String, current: String, asked: String)? {
        func seconds(_ millis: Int64) -> String { String(Double(millis) / 1000) }
        if let wait = asked.ackWaitMillis, wait != ackWaitMillis {
            return ("ack_wait", seconds(ackWaitMillis), seconds(wait))
        }
        if let max = asked.maxDeliver, max != maxDeliver {
            return ("max_deliver", maxDeliver.map(String.init) ?? "none", String(max))
        }
        if let stream = asked.deadLetter, stream != deadLetter {
            return ("dead_letter", deadLetter ?? "none", stream)
        }
        return nil
    }

    public init(ackWaitMillis: Int64 = Self.defaultAckWaitMillis, maxDeliver: Int? = nil, deadLetter: String? = nil) {
        self.ackWaitMillis = ackWaitMillis
        self.maxDeliver = maxDeliver
        self.deadLetter = deadLetter
    }
}

/// One event handed out and not yet acknowledged.
public struct PendingDelivery: Sendable, Equatable {
    /// Who holds it; `nil` once it is free to go to any member (its holder left or gave it
    /// back, or its time ran out).
    public var member: String?
    /// The member it was last given to.
    public var lastMember: String
    /// How many times it has been handed out.
    public var deliveries: Int
    /// While held: when it is taken back. While free: when it may be handed out again
    /// (a NACK's delay). In ms since 1970.
    public var due: Int64
    /// When it was first and last handed out (ms).
    public var firstDelivered: Int64
    public var lastDelivered: Int64
}

/// A consumer group of one stream: a cursor (`deliveredSequence`, the last event ever
/// handed out) plus the events handed out and not acknowledged (`pending`). Each event
/// goes to one member at a time; an ACK removes it; a NACK, its member leaving or its
/// `ackWait` running out frees it for any member, with its delivery count kept; after
/// `maxDeliver` deliveries it leaves for the dead-letter stream.
///
/// A value with no I/O and no clock: every decision takes `now`, so each transition is
/// tested on its own (`ConsumerGroupTests`), and the writer applies them inside its batch
/// and stores the result in the same transaction, like any other write.
public struct ConsumerGroup: Sendable, Equatable {
    public let name: String
    public var settings: GroupSettings
    public var deliveredSequence: UInt64
    public var pending: [UInt64: PendingDelivery] = [:]
    public let createdAt: Int64
    /// Events handed out for the first time, again, and given up on.
    public var delivered: UInt64 = 0
    public var redelivered: UInt64 = 0
    public var deadLettered: UInt64 = 0

    public init(name: String, settings: GroupSettings, deliveredSequence: UInt64, createdAt: Int64) {
        self.name = name
        self.settings = settings
        self.deliveredSequence = deliveredSequence
        self.createdAt = createdAt
    }

    /// What one request for work gave.
    public struct Handout: Sendable, Equatable {
        /// The events given to the member, by sequence number, with their delivery counts.
        public var given: [(sequence: UInt64, deliveries: Int)] = []
        /// Events that reached `maxDeliver` and leave for the dead-letter stream.
        public var deadLetters: [(sequence: UInt64, delivery: PendingDelivery)] = []
        /// Events retention removed before the group handed them out: the member is told
        /// (a GAP), and the group goes on after them.
        public var skipped: ClosedRange<UInt64>?

        public static func == (a: Handout, b: Handout) -> Bool {
            a.given.elementsEqual(b.given, by: ==) && a.deadLetters.elementsEqual(b.deadLetters, by: ==) && a.skipped == b.skipped
        }
    }

    /// Gives `member` up to `limit` events (less what it already holds in time): first those free again (oldest first), then new
    /// ones after `deliveredSequence`, up to the stream's `lastSequence`. Events whose time
    /// ran out are freed first; free ones that reached `maxDeliver` are dead letters instead.
    public mutating func handOut(to member: String, limit: Int, now: Int64, firstSequence: UInt64, lastSequence: UInt64) -> Handout {
        var handout = Handout()
        let limit = limit - held(by: member, now: now)
        var free: [UInt64] = []
        for (sequence, delivery) in pending {
            // Held and still in time, or given back with a delay not yet over.
            guard delivery.due <= now else { continue }
            if let max = settings.maxDeliver, delivery.deliveries >= max {
                handout.deadLetters.append((sequence, delivery))
            } else {
                free.append(sequence)
            }
        }
        for (sequence, _) in handout.deadLetters {
            pending[sequence] = nil
            deadLettered += 1
        }
        handout.deadLetters.sort { $0.sequence < $1.sequence }
        for sequence in free.sorted().prefix(limit) {
            pending[sequence]!.member = member
            pending[sequence]!.lastMember = member
            pending[sequence]!.deliveries += 1
            pending[sequence]!.due = now + settings.ackWaitMillis
            pending[sequence]!.lastDelivered = now
            redelivered += 1
            handout.given.append((sequence, pending[sequence]!.deliveries))
        }
        if deliveredSequence + 1 < firstSequence {
            handout.skipped = (deliveredSequence + 1)...(firstSequence - 1)
            deliveredSequence = firstSequence - 1
        }
        var next = deliveredSequence + 1
        while handout.given.count < limit, next <= lastSequence {
            pending[next] = PendingDelivery(
                member: member, lastMember: member, deliveries: 1, due: now + settings.ackWaitMillis, firstDelivered: now, lastDelivered: now)
            handout.given.append((next, 1))
            deliveredSequence = next
            delivered += 1
            next += 1
        }
        return handout
    }

    /// Why an ACK or a NACK changed nothing.
    public enum Refusal: Error, Sendable, Equatable {
        /// Not pending: acknowledged already, never handed out, or trimmed.
        case notPending
        /// Pending, but held by another member or by none (it was taken back).
        case heldByAnother(String?)
    }

    /// Acknowledges one event its member holds.
    public mutating func acknowledge(_ sequence: UInt64, by member: String) -> Result<Void, Refusal> {
        guard let delivery = pending[sequence] else { return .failure(.notPending) }
        guard delivery.member == member else { return .failure(.heldByAnother(delivery.member)) }
        pending[sequence] = nil
        return .success(())
    }

    /// What a NACK did.
    public enum Release: Sendable, Equatable {
        /// Free again from `due` on.
        case freed
        /// It had reached `maxDeliver`: it leaves for the dead-letter stream.
        case deadLetter(PendingDelivery)
    }

    /// Gives back one event its member holds, to be handed out again after `delayMillis`.
    public mutating func giveBack(_ sequence: UInt64, by member: String, delayMillis: Int64, now: Int64) -> Result<Release, Refusal> {
        guard var delivery = pending[sequence] else { return .failure(.notPending) }
        guard delivery.member == member else { return .failure(.heldByAnother(delivery.member)) }
        if let max = settings.maxDeliver, delivery.deliveries >= max {
            pending[sequence] = nil
            deadLettered += 1
            return .success(.deadLetter(delivery))
        }
        delivery.member = nil
        delivery.due = now + max(0, delayMillis)
        pending[sequence] = delivery
        return .success(.freed)
    }

    /// A member left (UNSUB, its connection closed): what it held is free at once.
    /// Returns how many events it held.
    @discardableResult
    public mutating func release(_ member: String, now: Int64) -> Int {
        var count = 0
        for (sequence, delivery) in pending where delivery.member == member {
            pending[sequence]!.member = nil
            pending[sequence]!.due = now
            count += 1
        }
        return count
    }

    /// Retention removed every event before `firstSequence`: what was pending of them
    /// leaves the group (a member that had not read them yet sees a gap; a later ACK of one
    /// is refused). Events never handed out are skipped at the next hand-out, which reports
    /// them. Whether anything changed.
    @discardableResult
    public mutating func trim(before firstSequence: UInt64) -> Bool {
        let before = pending.count
        pending = pending.filter { $0.key >= firstSequence }
        return pending.count != before
    }

    /// The first event the group still needs: retention that waits for groups keeps it.
    public var floor: UInt64 {
        min(pending.keys.min() ?? .max, deliveredSequence + 1)
    }

    /// The next time something changes without a request: a held event's time runs out, or
    /// a given-back event's delay ends. `nil`: nothing pending.
    public var nextDue: Int64? {
        pending.values.map(\.due).min()
    }

    /// The pending events that differ from `before`: each changed or new one, and `nil`
    /// for each no longer pending.
    func pendingChanges(since before: [UInt64: PendingDelivery]) -> [UInt64: PendingDelivery?] {
        var changes: [UInt64: PendingDelivery?] = [:]
        for (sequence, delivery) in pending where before[sequence] != delivery { changes[sequence] = .some(delivery) }
        for sequence in before.keys where pending[sequence] == nil { changes[sequence] = .some(nil) }
        return changes
    }

    /// How many events `member` holds (whose time has not run out at `now`).
    public func held(by member: String, now: Int64 = .min) -> Int {
        pending.values.reduce(0) { $0 + ($1.member == member && $1.due > now ? 1 : 0) }
    }
}
