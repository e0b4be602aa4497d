import Foundation
import NIOCore
import ReplayModel
import ReplayProtocol
import ReplayStore
import ReplaySync

/// One member of a consumer group (`SUB <stream> <sid> group=<name> …`): asks the writer
/// for work, sends what it was given as EVENT frames, and asks again.
///
/// The group's state is the store's (`ConsumerGroup`, changed by the writer in its batch),
/// so a member holds nothing but its stream's name: what it was given is remembered before
/// it is sent, and a member that dies (its connection, or the daemon) leaves its events in
/// the pending set, to be handed to another member once its group's `ack_wait` runs out,
/// or at once when its subscription ends cleanly (`leave`).
///
/// When there is nothing for it (no new events, or it holds its limit), its request waits
/// at the writer (`WaitingMembers`), which answers it in the commit that makes work for
/// it: new events, an ACK that frees room, a held event's time running out. The given
/// events are read with the one cursor core (`LogCursor`), from the tail ring or the
/// store, one run of consecutive sequence numbers at a time.
struct GroupMember: Sendable {
    let stream: String
    let sid: String
    let group: String
    let member: String
    let maxPending: Int
    let deadLetter: String?
    let hub: StreamHub
    let context: ServerContext
    let phase: SubscriptionPhase
    let output: MemberOutput
    /// Whether each event carries its hash-chain link (`SUB … group=<name> hash=on`).
    var hashes = false

    /// Delivers until the task is cancelled (UNSUB, the connection's end), the stream is
    /// deleted or ends with nothing left to hand out, or the connection fails.
    func run() async {
        // A member of `max_pending=0` is handed nothing: it only acknowledges, by its id, what
        // another subscription of the member holds, and leaving frees none of it.
        guard maxPending > 0 else {
            while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
            return
        }
        hub.subscriberJoined()
        context.hubs.groupMembers.joined(member, group: group, of: stream)
        defer {
            hub.subscriberLeft()
            context.hubs.groupMembers.left(member, group: group, of: stream)
            // What this member holds goes back at once, unless the same member id is still
            // subscribed here (another of its subscriptions holds on).
            if !context.hubs.groupMembers.isConnected(member, group: group, of: stream) {
                context.store.group(.leave(group: group, member: member) { _ in }, of: stream)
            }
        }
        let log = PooledStore(store: context.store, reads: context.reads)
        let framed = FramedHandout(stream: stream, sid: sid, delivery: delivery, hashes: hashes)
        do {
            while !Task.isCancelled {
                phase.enter(.parked(after: hub.info.lastSequence))
                framed.clear()
                let handout: GroupHandout
                switch await handOut(framed) {
                case nil: continue  // sent from the writer's thread, then cancelled
                case .success(let given)?: handout = given
                case .failure(.unavailable)?:
                    // The store is away (PostgreSQL): ask again after a while, as a cursor would.
                    try await Task.sleep(for: .seconds(1))
                    continue
                case .failure(let error)?:
                    return try await end(error)
                }
                phase.enter(.delivering)
                if let skipped = handout.skipped {
                    let gap = ServerFrame.gap(stream: stream, sid: sid, from: skipped.lowerBound, through: skipped.upperBound)
                    try await output.write(gap.bytes)
                }
                if !handout.given.isEmpty {
                    // What the writer read for this member first, then any rest read here.
                    if handout.read > 0 {
                        let (body, bytes) = framed.take()
                        hub.delivered(events: handout.read, bytes: bytes)
                        try await output.write(body)
                    }
                    guard try await send(handout.given.dropFirst(handout.read).map(\.sequence), log: log) else { return }
                    continue
                }
                // The stream ended and the group's work is done: so is this member's. (An
                // answer of nothing else: its wait ended without work, ask again.)
                if handout.finished { return try await end(nil) }
            }
        } catch let error as StoreError {
            // A corrupt event stops the member with the error that names it (what it held
            // goes back, above); any other store error is the store closing.
            if let frame = error.subscriptionFrame(stream: stream, sid: sid) { try? await output.write(frame.bytes) }
        } catch {
            // The connection is gone: what this member held goes back (above).
        }
    }

    /// Asks the writer for work; when there is none, the request waits there until there
    /// is (or this task is cancelled).
    ///
    /// A hand-out the writer framed in full (`FramedHandout`) is sent from the writer's
    /// thread, and the next one asked for from there too (`relay`): a member that keeps
    /// getting work costs no wake-up of its task per hand-out, and its events reach the
    /// socket one thread hop after their commit. The task hears of the rest: a gap, events
    /// it must read itself, its work done, an error, a socket without room. `nil`: sent
    /// from the writer's thread, and not asked again because the task was cancelled.
    private func handOut(_ framed: FramedHandout) async -> Result<GroupHandout, StoreError>? {
        let ticket = WaitTicket()
        let stopped = Locked(false)
        let (store, stream) = (context.store, stream)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                relay(ticket: ticket, framed: framed, stopped: stopped) { continuation.resume(returning: $0) }
            }
        } onCancel: {
            stopped.withLock { $0 = true }
            store.group(.stopWaiting(ticket), of: stream)
        }
    }

    /// One hand-out, under the member's one ticket; sent and asked again from the writer's
    /// thread while it can be (see `handOut`), else answered.
    private func relay(
        ticket: WaitTicket, framed: FramedHandout, stopped: Locked<Bool>,
        answer: @escaping @Sendable (Result<GroupHandout, StoreError>?) -> Void
    ) {
        let config = StreamConfig(capacity: context.configuration.defaultCapacity)
        let request = GroupRequest.handOut(
            group: group, member: member, limit: maxPending, deadLetterConfig: config, wait: ticket, read: framed.reader
        ) { [self] result in
            guard case .success(let handout) = result, handout.skipped == nil, !handout.given.isEmpty,
                handout.read == handout.given.count, output.isWritable
            else { return answer(result) }
            let (body, bytes) = framed.take()
            hub.delivered(events: handout.read, bytes: bytes)
            output.send(body)
            phase.enter(.parked(after: hub.info.lastSequence))
            // Asked again under the lock that cancellation takes first: the next request is
            // either in the writer's queue before `stopWaiting`, or not asked at all.
            let relayed = stopped.withLock { isStopped in
                if !isStopped { relay(ticket: ticket, framed: framed, stopped: stopped, answer: answer) }
                return !isStopped
            }
            if !relayed { answer(nil) }
        }
        context.store.group(request, of: stream, deadLetter: deadLetter)
    }

    /// Sends the given events as EVENT frames, each run of consecutive sequence numbers
    /// through the cursor core. Events retention removed meanwhile are a GAP (they left the
    /// group's pending set with it). `false`: the stream was deleted, and said so.
    /// What a traced event's delivery to this member records: its hand-out.
    private var delivery: TracedDelivery? {
        context.tracer.isOn ? TracedDelivery(tracer: context.tracer, stream: stream, group: (group, member)) : nil
    }

    private func send(_ sequences: [UInt64], log: PooledStore) async throws -> Bool {
        for run in sequences.consecutiveRuns {
            let (first, through) = (run.lowerBound, run.upperBound)
            var cursor = LogCursor(
                hub: hub, log: log, framing: EventFrames(stream: stream, sid: sid, delivery: delivery, hashes: hashes), from: first,
                liveAfter: .max,
                retry: .untilCancelled)
            while cursor.next <= through {
                let limit = Int(through - cursor.next + 1)
                switch try await cursor.move(limit: limit, byteBudget: Subscription.pageBytes) {
                case .ring(let entries):
                    delivery?.delivered(entries)
                    try await Subscription.send(entries, stream: stream, sid: sid, output: output, hub: hub, hashes: hashes)
                case .stored(let page):
                    hub.delivered(events: page.events, bytes: page.payloadBytes)
                    try await output.write(page.body)
                case .gap(let from, let gapThrough):
                    try await output.write(ServerFrame.gap(stream: stream, sid: sid, from: from, through: min(gapThrough, through)).bytes)
                case .caughtUp, .ended:
                    // Handed out, so committed: nothing past the stream's end was given.
                    return true
                case .deleted:
                    try await end(StoreError.unknownStream(stream))
                    return false
                }
            }
        }
        return true
    }

    /// The member's last frame: COMPLETED or FAILED when its stream ended (everything
    /// acknowledged), FAILED when it was deleted or the group is gone.
    private func end(_ error: StoreError?) async throws {
        let info = hub.info
        let frame: ServerFrame
        switch (error, info.terminal) {
        case (nil, .completed?):
            frame = .completed(stream: stream, sid: sid, lastSequence: info.lastSequence)
        case (nil, .failed(let message)?):
            frame = .failed(stream: stream, sid: sid, lastSequence: info.lastSequence, message: message)
        case (.unknownStream?, _):
            frame = .failed(stream: stream, sid: sid, lastSequence: info.lastSequence, message: "stream '\(stream)' was deleted")
        case (let error?, _):
            frame = .failed(stream: stream, sid: sid, lastSequence: info.lastSequence, message: error.description)
        case (nil, nil):
            return
        }
        try await output.write(frame.bytes)
    }
}

/// A member's hand-out as EVENT frames, written by the writer's thread as it reads the
/// events (`HandoutReader`) and taken by the member once the hand-out is answered: up to a
/// page of payload, the rest the member reads itself.
final class FramedHandout: Sendable {
    private let frames = Locked((body: ByteBuffer(), bytes: 0))
    let reader: HandoutReader

    init(stream: String, sid: String, delivery: TracedDelivery?, hashes: Bool) {
        let frames = self.frames
        reader = HandoutReader(byteBudget: Subscription.pageBytes) { sequence, time, payload, trace, hash, key in
            delivery?.delivered(sequence, trace: trace)
            let hash = hashes ? hash.flatMap(EventHash.init(bytes:)) : nil
            frames.withLock { frames in
                ServerFrame.writeEvent(
                    stream: stream, sid: sid, sequence: sequence, time: time, payload: payload, trace: trace, hash: hash, key: key,
                    into: &frames.body)
                frames.bytes += payload.count
            }
        }
    }

    /// Forgets a hand-out's frames (one that failed after the writer read for it).
    func clear() {
        frames.withLock { $0 = (ByteBuffer(), 0) }
    }

    /// The frames and their payload bytes.
    func take() -> (ByteBuffer, Int) {
        frames.withLock { frames in
            defer { frames = (ByteBuffer(), 0) }
            return frames
        }
    }
}
