import Foundation
import ReplayModel
import ReplayProtocol
import ReplayStore

/// ACK and NACK, and the members of consumer groups: on one stream (`GroupMember`), and on
/// every stream a pattern matches (one `GroupMember` per stream, under one sid).
extension Connection {
    /// ACK for a durable subscription (the consumer's position moves) or a group member
    /// (the event leaves the group's pending set), answered once committed.
    func acknowledge(sid: String, sequence: UInt64, stream: String?, slot: ReplyOrder.Slot) {
        var run = AcknowledgementRun()
        acknowledge(sid: sid, sequence: sequence, stream: stream, slot: slot, into: &run)
        run.submit(to: context.store, replies: replies)
    }

    /// The same, a group member's ACK joining `run` (submitted when the next ACK is of
    /// another member, or anything else must go first).
    func acknowledge(sid: String, sequence: UInt64, stream: String?, slot: ReplyOrder.Slot, into run: inout AcknowledgementRun) {
        let running = state.withLock { $0.running(sid) }
        let replies = self.replies
        if let running, let group = running.group {
            let target: String
            switch Self.eventStream(stream, running, "ACK") {
            case .success(let stream): target = stream
            case .failure(let refusal): return replies.fill(slot, with: .error(refusal))
            }
            if !run.continues(stream: target, group: group.name, member: group.member) {
                run.submit(to: context.store, replies: replies)
            }
            if context.tracer.isOn { context.tracer.settled(sequence, of: target, group: group.name, member: group.member, acknowledged: true) }
            return run.add(sequence, slot: slot, stream: target, group: group.name, member: group.member)
        }
        run.submit(to: context.store, replies: replies)
        guard let running, let consumer = running.consumer, stream == nil || stream == running.phase.stream else {
            let reason =
                running == nil
                ? "subscription '\(sid)' has ended"
                : running?.consumer == nil
                    ? "subscription '\(sid)' is neither durable (SUB … durable=<name>) nor a group member (SUB … group=<name>)"
                    : "subscription '\(sid)' reads '\(running!.phase.stream)', not '\(stream ?? "")'"
            return replies.fill(slot, with: .error(ReplayError(.invalidAck, "\(reason); nothing changed")))
        }
        context.store.acknowledge(sequence, consumer: consumer, of: running.phase.stream) { replies.fill(slot, with: $0) }
    }

    /// NACK for a group member: the event goes back to the group, to be handed out again
    /// after `delay` seconds (or to the dead-letter stream, after `max_deliver`).
    func giveBack(sid: String, sequence: UInt64, stream: String?, delay: Double, slot: ReplyOrder.Slot) {
        let running = state.withLock { $0.running(sid) }
        guard let running, let group = running.group else {
            let reason = running == nil ? "subscription '\(sid)' has ended" : "subscription '\(sid)' is not a group member (SUB … group=<name>)"
            return replies.fill(slot, with: .error(ReplayError(.invalidAck, "NACK: \(reason); nothing changed")))
        }
        let target: String
        switch Self.eventStream(stream, running, "NACK") {
        case .success(let stream): target = stream
        case .failure(let refusal): return replies.fill(slot, with: .error(refusal))
        }
        let replies = self.replies
        if context.tracer.isOn { context.tracer.settled(sequence, of: target, group: group.name, member: group.member, acknowledged: false) }
        let config = StreamConfig(capacity: context.configuration.defaultCapacity)
        let request = GroupRequest.giveBack(
            group: group.name, member: group.member, sequence: sequence, delayMillis: Int64((delay * 1000).rounded()),
            deadLetterConfig: config
        ) { replies.fill(slot, with: $0) }
        context.store.group(request, of: target, deadLetter: group.deadLetter)
    }

    /// The stream of the event a group member's ACK or NACK names: its own stream (which
    /// `stream=` may repeat), or on a pattern, `stream=`, which the pattern must match.
    private static func eventStream(_ stream: String?, _ running: ConnectionState.Running, _ verb: String) -> Result<String, ReplayError> {
        guard let pattern = running.group?.pattern else {
            guard let stream, stream != running.phase.stream else { return .success(running.phase.stream) }
            return .failure(
                ReplayError(.invalidAck, "\(verb): this subscription reads '\(running.phase.stream)', not '\(stream)'; nothing changed"))
        }
        guard let stream else {
            return .failure(
                ReplayError(.invalidAck, "\(verb): this member reads the pattern '\(pattern)': name the event's stream (stream=<name>); nothing changed"))
        }
        guard pattern.matches(stream) else {
            return .failure(ReplayError(.invalidAck, "\(verb): '\(stream)' does not match this member's pattern '\(pattern)'; nothing changed"))
        }
        return .success(stream)
    }

    /// A group member: joins the group now, in command order, answers, and only once `+OK`
    /// is written asks for work.
    func join(
        _ stream: String, sid: String, start: StartPosition, options: GroupOptions, hashes: Bool = false, slot: ReplyOrder.Slot
    ) {
        let joined = SubscriptionStart(context: context).join(stream, start, options)
        let phase = SubscriptionPhase(stream: stream)
        // Unique across connections and daemons unless the client names it.
        let member = options.member ?? "\(sid)-\(UInt32.random(in: .min ... .max))"
        let replies = self.replies
        let context = self.context
        state.withLock { state in
            _ = state.started(sid) { token in
                let task = Task { [self] in
                    defer {
                        phase.enter(.finished)
                        subscriptionFinished(sid, token: token)
                    }
                    let settings: GroupSettings
                    switch await joined.value {
                    case .success(let group): settings = group.settings
                    case .failure(let error): return refuse(sid, token: token, slot: slot, error)
                    }
                    guard let hub = context.hubs[stream] else {
                        return refuse(sid, token: token, slot: slot, ReplayError(StoreError.unknownStream(stream)))
                    }
                    guard await answerOK(slot, phase: phase) else { return }
                    let lease = context.lease(stream)
                    defer { lease.dispose() }
                    await GroupMember(
                        stream: stream, sid: sid, group: options.group, member: member,
                        maxPending: options.maxPending ?? GroupOptions.defaultMaxPending, deadLetter: settings.deadLetter, hub: hub,
                        context: context, phase: phase, output: MemberOutput(router: replies.sink), hashes: hashes
                    ).run()
                }
                return ConnectionState.Running(task: task, phase: phase, group: (options.group, member, options.deadLetter, nil))
            }
        }
    }

    /// A member of the group on every stream the pattern matches: the streams matching now
    /// join (or create, at `start`) their group in command order, and the SUB is refused,
    /// with nothing changed, if one of them has other settings; a stream created later joins
    /// the group from its first event. One `GroupMember` per stream, under one sid: each
    /// holds up to `max_pending` of its stream's events.
    func join(
        _ pattern: StreamPattern, sid: String, start: StartPosition, options: GroupOptions, hashes: Bool = false, slot: ReplyOrder.Slot
    ) {
        let begun = PatternSubscription.start(pattern, start, hubs: context.hubs)
        // The settings are checked first against every matching stream's group, so that a
        // conflict refuses the SUB before any group is created.
        let asked = options.asked
        for (hub, _) in begun.existing {
            if let group = context.store.groups(of: hub.name)?[options.group], let conflict = group.settings.conflict(with: asked) {
                context.hubs.unwatch(begun.token)
                let error = StoreError.groupConflict(
                    stream: hub.name, group: options.group, setting: conflict.setting, current: conflict.current, asked: conflict.asked)
                return refuse(sid, token: nil, slot: slot, ReplayError(error))
            }
        }
        let starting = SubscriptionStart(context: context)
        let joins = begun.existing.map { hub, _ in (hub, starting.join(hub.name, start, options)) }
        let phase = SubscriptionPhase(stream: pattern.description)
        let member = options.member ?? "\(sid)-\(UInt32.random(in: .min ... .max))"
        let (replies, context) = (self.replies, self.context)
        let started = state.withLock { state in
            state.started(sid) { token in
                let task = Task { [self] in
                    defer {
                        context.hubs.unwatch(begun.token)
                        phase.enter(.finished)
                        subscriptionFinished(sid, token: token)
                    }
                    var ready: [StreamHub] = []
                    for (hub, joined) in joins {
                        switch await joined.value {
                        case .success: ready.append(hub)
                        case .failure(let error): return refuse(sid, token: token, slot: slot, error)
                        }
                    }
                    guard await answerOK(slot, phase: phase) else { return }
                    let run: @Sendable (StreamHub) async -> Void = { hub in
                        let lease = context.lease(hub.name)
                        defer { lease.dispose() }
                        await GroupMember(
                            stream: hub.name, sid: sid, group: options.group, member: member,
                            maxPending: options.maxPending ?? GroupOptions.defaultMaxPending, deadLetter: options.deadLetter, hub: hub,
                            context: context, phase: SubscriptionPhase(stream: hub.name), output: MemberOutput(router: replies.sink),
                            hashes: hashes
                        ).run()
                    }
                    await withTaskGroup(of: Void.self) { members in
                        for hub in ready { members.addTask { await run(hub) } }
                        // Ends when the task is cancelled (UNSUB, the connection's end).
                        for await hub in begun.appeared {
                            members.addTask {
                                // All of a new stream is new to the group.
                                guard case .success = await starting.join(hub.name, .all, options).value else { return }
                                await run(hub)
                            }
                        }
                        members.cancelAll()
                    }
                }
                return ConnectionState.Running(task: task, phase: phase, group: (options.group, member, options.deadLetter, pattern))
            }
        }
        if started == nil { context.hubs.unwatch(begun.token) }
    }
}

extension GroupOptions {
    /// The group settings this SUB names, in the store's terms.
    var asked: GroupSettings.Asked {
        GroupSettings.Asked(ackWaitMillis: ackWait.map { Int64(($0 * 1000).rounded()) }, maxDeliver: maxDeliver, deadLetter: deadLetter)
    }
}

/// Consecutive ACKs of one group member, read together, on their way to the writer as one
/// request (`GroupRequest.acknowledge`); each is answered in its own reply slot.
struct AcknowledgementRun {
    private var stream = ""
    private var group = ""
    private var member = ""
    private var sequences: [UInt64] = []
    private var slots: [ReplyOrder.Slot] = []

    func continues(stream: String, group: String, member: String) -> Bool {
        sequences.isEmpty || (self.stream == stream && self.group == group && self.member == member)
    }

    mutating func add(_ sequence: UInt64, slot: ReplyOrder.Slot, stream: String, group: String, member: String) {
        (self.stream, self.group, self.member) = (stream, group, member)
        sequences.append(sequence)
        slots.append(slot)
    }

    /// Sends what was gathered (nothing if nothing was), and starts again.
    mutating func submit(to store: EventStore, replies: ReplyChannel) {
        guard !sequences.isEmpty else { return }
        defer { self = AcknowledgementRun() }
        let slots = self.slots
        store.group(
            .acknowledge(group: group, member: member, sequences: sequences) { result in
                switch result {
                case .success(let each): for (slot, result) in zip(slots, each) { replies.fill(slot, with: result) }
                case .failure(let error): for slot in slots { replies.fill(slot, with: .failure(error)) }
                }
            }, of: stream)
    }
}
