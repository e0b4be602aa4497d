import Foundation
import NIOCore
import ReplayProtocol
import ReplaySync
import ReplayTesting
import Testing

/// Consumer groups against the real daemon: each event to one member at a time, ACKs of
/// one event, redelivery when a member leaves or runs out of time, dead letters, and bad
/// input that changes nothing.
@Suite("replayd: consumer groups", .timeLimit(.minutes(5)))
struct ConsumerGroupTests {
    /// Every event a set of workers acknowledged, by sequence number: who and how often.
    final class Ledger: Sendable {
        let acked = Locked<[UInt64: [String]]>([:])
        let received = Locked<[UInt64: Int]>([:])

        var ackedCount: Int { acked.withLock { $0.values.reduce(0) { $0 + $1.count } } }
    }

    /// A worker: acknowledges every event it receives (or, with `failing`, gives it back),
    /// until the PING its coordinator sends once the work is done answers.
    func work(_ client: WireClient, name: String, sid: String, ledger: Ledger, failing: Bool = false) async throws {
        var owed: [UInt64] = []
        while true {
            switch try await client.expectFrame() {
            case .event(_, let frameSID, let sequence, _, _, _, _, _) where frameSID == sid:
                ledger.received.withLock { $0[sequence, default: 0] += 1 }
                owed.append(sequence)
                try await client.send(failing ? .nack(sid: sid, sequence: sequence) : .ack(sid: sid, sequence: sequence))
            case .ok:
                let sequence = owed.removeFirst()
                if !failing { ledger.acked.withLock { $0[sequence, default: []].append(name) } }
            case .pong:
                return
            case let other:
                throw TestFailure("\(name): unexpected \(other)")
            }
        }
    }

    func join(_ client: WireClient, _ stream: String, sid: String, _ options: GroupOptions, start: StartPosition = .all) async throws {
        try await client.send(.subscribeGroup(stream: stream, sid: sid, start: start, options: options))
        let reply = try await client.expectFrame()
        guard reply == .ok else { throw TestFailure("SUB \(stream) \(sid) group=\(options.group) answered \(reply)") }
    }

    func json<T: Decodable>(_ client: WireClient, _ command: ClientCommand, as type: T.Type) async throws -> T {
        try await client.send(command)
        guard case .list(let body) = try await client.expectFrame() else { throw TestFailure("\(command.verb): expected JSON") }
        return try JSONDecoder().decode(T.self, from: Data(body.readableBytesView))
    }

    @Test func membersShareTheWorkEachEventAcknowledgedOnce() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { publisher in
                let total = 300
                _ = try await publisher.publish("jobs", (1...total).map { "job \($0)" })
                let ledger = Ledger()
                try await withWireClient(daemon.socketPath) { a in
                    try await withWireClient(daemon.socketPath) { b in
                        try await join(a, "jobs", sid: "w", GroupOptions(group: "g", member: "a", ackWait: 3600, maxPending: 7))
                        try await join(b, "jobs", sid: "w", GroupOptions(group: "g", member: "b", maxPending: 7))
                        try await withThrowingTaskGroup(of: Void.self) { group in
                            group.addTask { try await work(a, name: "a", sid: "w", ledger: ledger) }
                            group.addTask { try await work(b, name: "b", sid: "w", ledger: ledger) }
                            // 600 round trips on two cores shared with the whole suite: once over the
                            // default 30 s there (the test took 130 s in all, its setup as slow), never
                            // near it in 12 runs of this suite beside two busy loops.
                            try await eventually(within: 120, "\(total) acknowledgements") { ledger.ackedCount >= total }
                            try await a.send(.ping)
                            try await b.send(.ping)
                            try await group.waitForAll()
                        }
                    }
                }
                let acked = ledger.acked.withLock { $0 }
                #expect(acked.keys.sorted() == Array(1...UInt64(total)))
                #expect(acked.values.allSatisfy { $0.count == 1 })
                // Both worked: with 7 events each at most in hand, neither could take all.
                #expect(Set(acked.values.map { $0[0] }) == ["a", "b"])
                let groups = try await json(publisher, .groups(stream: "jobs"), as: [GroupDescription].self)
                #expect(groups.map(\.name) == ["g"])
                #expect(groups.first?.pending == 0)
                #expect(groups.first?.delivered == UInt64(total))
                #expect(groups.first?.lag == 0)
            }
        }
    }

    @Test func whatALeavingMemberHeldGoesToAnotherAtOnce() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { publisher in
                _ = try await publisher.publish("q", ["1", "2", "3"])
                // a takes all three and closes its connection without acknowledging.
                try await withWireClient(daemon.socketPath) { a in
                    try await join(a, "q", sid: "s", GroupOptions(group: "g", member: "a", ackWait: 3600))
                    #expect(try await a.events(3).map(\.0) == [1, 2, 3])
                }
                try await withWireClient(daemon.socketPath) { b in
                    try await join(b, "q", sid: "s", GroupOptions(group: "g", member: "b"))
                    #expect(try await b.events(3).map(\.0) == [1, 2, 3])
                    let pending = try await json(publisher, .pending(stream: "q", group: "g"), as: [PendingDescription].self)
                    #expect(pending.map(\.member) == ["b", "b", "b"])
                    #expect(pending.map(\.deliveries) == [2, 2, 2])
                    #expect(pending.map(\.lastMember) == ["b", "b", "b"])
                }
            }
        }
    }

    @Test func anEventNotAcknowledgedInTimeIsHandedOutAgainWithItsCountRaised() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { publisher in
                _ = try await publisher.publish("q", ["only", "second"])
                try await withWireClient(daemon.socketPath) { a in
                    // a holds one event at most, stays connected and never acknowledges: once
                    // its time runs out, the event is handed out again (to a, the only member).
                    try await join(a, "q", sid: "s", GroupOptions(group: "g", member: "a", ackWait: 0.2, maxPending: 1))
                    #expect(try await a.events(1).map(\.0) == [1])
                    #expect(try await a.events(1).map(\.0) == [1])
                    let pending = try await json(publisher, .pending(stream: "q", group: "g"), as: [PendingDescription].self)
                    #expect(pending.map(\.seq) == [1])
                    #expect((pending.first?.deliveries ?? 0) >= 2)
                }
            }
        }
    }

    @Test func anEventThatAlwaysFailsLandsInTheDeadLetterStreamWithItsOrigin() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { publisher in
                _ = try await publisher.publish("tasks", ["poison"])
                let ledger = Ledger()
                try await withWireClient(daemon.socketPath) { worker in
                    try await join(worker, "tasks", sid: "w", GroupOptions(group: "g", member: "m1", maxDeliver: 3, deadLetter: "tasks.dead"))
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask { try await work(worker, name: "m1", sid: "w", ledger: ledger, failing: true) }
                        try await eventually("the dead letter") { try await deadLettered(publisher) == 1 }
                        try await worker.send(.ping)
                        try await group.waitForAll()
                    }
                }
                #expect(ledger.received.withLock { $0 } == [1: 3])
                try await publisher.subscribe("tasks.dead", sid: "d")
                #expect(try await publisher.events(1).map(\.1) == ["poison"])
                let origin = try await runProgram(
                    "/usr/bin/sqlite3",
                    [daemon.databasePath, "SELECT stream, seq, origin, origin_seq, group_name, deliveries, last_member FROM dead_letters"])
                #expect(origin.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "tasks.dead|1|tasks|1|g|3|m1")
                let pending = try await json(publisher, .pending(stream: "tasks", group: "g"), as: [PendingDescription].self)
                #expect(pending.isEmpty)
            }
        }
    }

    func deadLettered(_ client: WireClient) async throws -> UInt64 {
        try await json(client, .groups(stream: "tasks"), as: [GroupDescription].self).first?.deadLettered ?? 0
    }

    @Test func aRestartForgetsNothingAcknowledgedAndKeepsEverythingElse() async throws {
        try await withTemporaryDirectory { directory in
            let first = try await TestDaemon.start(in: directory)
            try await withWireClient(first.socketPath) { client in
                _ = try await client.publish("q", ["1", "2", "3", "4"])
                try await join(client, "q", sid: "s", GroupOptions(group: "g", member: "a", ackWait: 2, maxPending: 4))
                #expect(try await client.events(4).map(\.0) == [1, 2, 3, 4])
                try await client.send(.ack(sid: "s", sequence: 2), .ack(sid: "s", sequence: 3))
                // Two +OKs (a is the only member: an event whose time ran out on a loaded
                // machine comes back to it, and its ACK still counts).
                var oks = 0
                while oks < 2 {
                    let frame = try await client.expectFrame()
                    if frame == .ok { oks += 1 } else if case .event = frame {} else { throw TestFailure("expected +OK, got \(frame)") }
                }
            }
            _ = await first.stop(SIGKILL)
            let second = try await TestDaemon.start(in: directory)
            defer { Task { await second.stop() } }
            try await withWireClient(second.socketPath) { client in
                try await join(client, "q", sid: "s", GroupOptions(group: "g", member: "b"))
                // 1 and 4 were not acknowledged: handed out again once a's time ran out.
                var seen = Set<UInt64>()
                while seen.count < 2 {
                    let frame = try await client.expectFrame()
                    guard case .event(_, _, let sequence, _, _, _, _, _) = frame else { throw TestFailure("expected an event, got \(frame)") }
                    seen.insert(sequence)
                }
                #expect(seen == [1, 4])
            }
            await second.stop()
        }
    }

    /// ACKs read in one burst go to the writer together, each still answered on its own
    /// and in order: a refused one in the middle changes nothing for the others, and an
    /// UNSUB sent right after them takes effect after them (they count; nothing of theirs is
    /// handed out again).
    @Test func aBurstOfAcknowledgementsIsAnsweredOneByOneInOrder() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { client in
                _ = try await client.publish("q", ["1", "2", "3", "4", "5"])
                try await join(client, "q", sid: "s", GroupOptions(group: "g", member: "a", maxPending: 5))
                #expect(try await client.events(5).map(\.0) == [1, 2, 3, 4, 5])
                try await client.send("ACK s 1\r\nACK s 2\r\nACK s 9\r\nACK s 3\r\nACK s 2\r\nUNSUB s\r\n")
                let replies = try await client.frames(6)
                #expect(replies[0] == .ok && replies[1] == .ok && replies[3] == .ok && replies[5] == .ok)
                for refused in [replies[2], replies[4]] {
                    guard case .error(let error) = refused else { throw TestFailure("expected a refusal, got \(refused)") }
                    #expect(error.code == .invalidAck && error.message.contains("not pending"))
                }
                let pending = try await json(client, .pending(stream: "q", group: "g"), as: [PendingEntry].self)
                #expect(pending.map(\.seq) == [4, 5], "1, 2 and 3 acknowledged; 4 and 5 free again")
            }
        }
    }

    /// A hand-out larger than a page: the writer reads the first events for the member,
    /// and the member reads the rest itself; all arrive, in order, whole.
    @Test func aHandOutLargerThanAPageArrivesWholeAndInOrder() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { client in
                let payloads = ["a", "b", "c"].map { String(repeating: $0, count: 600_000) }
                _ = try await client.publish("big", payloads)
                try await join(client, "big", sid: "s", GroupOptions(group: "g", member: "m", maxPending: 3))
                let events = try await client.events(3)
                #expect(events.map(\.0) == [1, 2, 3])
                #expect(events.map(\.1) == payloads)
            }
        }
    }

    /// A member that leaves while its work keeps coming: its hand-outs were being sent and
    /// asked again from the writer's thread (`GroupMember.relay`), and leaving stops that,
    /// so what it held goes to the next member at once and every event is acknowledged once.
    @Test func aMemberThatLeavesWhileItsWorkKeepsComingIsHandedNothingMore() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { publisher in
                let (total, rounds, perRound) = (400, 15, 20)
                _ = try await publisher.publish("flow", (1...total).map { "job \($0)" })
                let ledger = Ledger()
                // Member after member takes a share and leaves, its last ACK and its UNSUB in
                // one write: the ACK frees room, so the writer may answer the member's relayed
                // hand-out in the very batch its UNSUB's stop joins (a race this cannot force).
                for round in 0..<rounds {
                    let name = "a\(round)"
                    try await withWireClient(daemon.socketPath) { a in
                        try await join(a, "flow", sid: "w", GroupOptions(group: "g", member: name, ackWait: 3600, maxPending: 2))
                        var (sent, confirmed) = (0, 0)
                        var owed: [UInt64] = []
                        while confirmed < perRound + 1 {
                            switch try await a.expectFrame() {
                            case .event(_, _, let sequence, _, _, _, _, _) where sent < perRound:
                                owed.append(sequence)
                                sent += 1
                                if sent < perRound {
                                    try await a.send(.ack(sid: "w", sequence: sequence))
                                } else {
                                    try await a.send(.ack(sid: "w", sequence: sequence), .unsubscribe(sid: "w"))
                                }
                            case .event:
                                break  // handed out before the UNSUB took effect: given back by it
                            case .ok:
                                if confirmed < perRound { ledger.acked.withLock { $0[owed.removeFirst(), default: []].append(name) } }
                                confirmed += 1
                            case let other:
                                throw TestFailure("\(name): unexpected \(other)")
                            }
                        }
                        // Its task ends after its UNSUB is answered, and gives back what it held.
                        try await eventually(within: 10, "\(name) holds nothing") {
                            try await json(publisher, .pending(stream: "flow", group: "g"), as: [PendingDescription].self).allSatisfy {
                                $0.member != name
                            }
                        }
                    }
                }
                try await withWireClient(daemon.socketPath) { b in
                    try await join(b, "flow", sid: "w", GroupOptions(group: "g", member: "b", ackWait: 3600, maxPending: 5))
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask { try await work(b, name: "b", sid: "w", ledger: ledger) }
                        try await eventually("\(total) acknowledgements") { ledger.ackedCount >= total }
                        try await b.send(.ping)
                        try await group.waitForAll()
                    }
                }
                let acked = ledger.acked.withLock { $0 }
                #expect(acked.keys.sorted() == Array(1...UInt64(total)))
                #expect(acked.values.allSatisfy { $0.count == 1 })
                let groups = try await json(publisher, .groups(stream: "flow"), as: [GroupDescription].self)
                #expect(groups.first?.pending == 0)
            }
        }
    }

    /// A member that acknowledges what it is given without reading its socket (it knows
    /// the numbers) cannot make the daemon buffer its stream: once the socket has no room,
    /// hand-outs stop being sent from the writer's thread, and the member's task waits for
    /// the socket before asking for more. Then everything arrives, in order.
    @Test func aMemberThatDoesNotReadIsHandedNoMoreThanItsSocketHolds() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { publisher in
                let total = 1_000
                let payload = String(repeating: "x", count: 16_384)
                for first in stride(from: 0, to: total, by: 100) {
                    _ = try await publisher.publish("big", Array(repeating: payload, count: min(100, total - first)))
                }
                try await withWireClient(daemon.socketPath) { member in
                    try await join(member, "big", sid: "s", GroupOptions(group: "g", member: "m", ackWait: 3600, maxPending: 1))
                    // Acknowledge each event once it is handed out, as the group's PENDING
                    // shows it, never reading the member's socket; stop when no more comes.
                    var acknowledged: UInt64 = 0
                    while acknowledged < UInt64(total) {
                        let next = acknowledged + 1
                        var handedOut = false
                        for _ in 0..<200 {
                            let pending = try await json(publisher, .pending(stream: "big", group: "g"), as: [PendingDescription].self)
                            if pending.contains(where: { $0.seq == next && $0.member == "m" }) {
                                handedOut = true
                                break
                            }
                            try await Task.sleep(for: .milliseconds(10))
                        }
                        guard handedOut else { break }
                        try await member.send(.ack(sid: "s", sequence: next))
                        acknowledged = next
                    }
                    // 16 KiB a frame: the two sockets' buffers hold some tens of them.
                    #expect(acknowledged < 200, "\(acknowledged) events handed out to a member that read none")
                    var expected: UInt64 = 1
                    var replies = 0
                    while expected <= acknowledged || replies < Int(acknowledged) {
                        switch try await member.expectFrame() {
                        case .event(_, _, let sequence, _, let body, _, _, _):
                            #expect(sequence == expected)
                            #expect(body.readableBytes == payload.utf8.count)
                            expected += 1
                        case .ok:
                            replies += 1
                        case let other:
                            throw TestFailure("unexpected \(other)")
                        }
                    }
                }
            }
        }
    }

    struct PendingEntry: Decodable {
        let seq: UInt64
    }

    @Test func badInputGetsAClearErrorAndChangesNothing() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { client in
                _ = try await client.publish("q", ["1"])
                try await join(client, "q", sid: "a", GroupOptions(group: "g", member: "m", ackWait: 3600))
                #expect(try await client.events(1).map(\.0) == [1])
                try await client.subscribe("q", sid: "plain")
                _ = try await client.events(1)
                let cases: [(String, ReplayError.Code, String)] = [
                    ("SUB q b all group=g ack_wait=9\r\n", .groupConflict, "ack_wait=3600.0, not 9.0"),
                    ("SUB q b all group=g max_deliver=2\r\n", .badCommand, "needs dead_letter"),
                    ("SUB q/* b all group=g max_deliver=2 dead_letter=q/dead\r\n", .badCommand, "matches the pattern"),
                    ("ACK a 7\r\n", .invalidAck, "not pending"),
                    ("ACK plain 1\r\n", .invalidAck, "neither durable"),
                    ("NACK plain 1\r\n", .invalidAck, "not a group member"),
                    ("ACK a 1 stream=other\r\n", .invalidAck, "reads 'q'"),
                    ("SUB q b all durable=d group=g\r\n", .badCommand, "not both"),
                    ("PENDING q nope\r\n", .unknownGroup, "no consumer group"),
                    ("PENDING q/* g\r\n", .badCommand, "not a pattern"),
                    ("SUB q b all group=g max_pending=10001\r\n", .badCommand, "max_pending"),
                    ("DELGROUP q nope\r\n", .unknownGroup, "no consumer group"),
                ]
                for (line, code, words) in cases {
                    try await client.send(line)
                    guard case .error(let error) = try await client.expectFrame() else { throw TestFailure("\(line): expected -ERR") }
                    #expect(error.code == code, "\(line)")
                    #expect(error.message.contains(words), "\(line): \(error.message)")
                }
                // Nothing changed: the member still holds its event, and acknowledges it.
                let pending = try await json(client, .pending(stream: "q", group: "g"), as: [PendingDescription].self)
                #expect(pending.map(\.member) == ["m"])
                try await client.send(.ack(sid: "a", sequence: 1))
                #expect(try await client.expectFrame() == .ok)
                try await client.send(.deleteGroup(stream: "q", group: "g"))
                // Its +OK, and the member's end: its group is gone (in either order).
                let frames = try await client.frames(2)
                #expect(frames.contains(.ok))
                #expect(
                    frames.contains {
                        if case .failed("q", "a", _, let message) = $0 { message.contains("no consumer group named 'g'") } else { false }
                    })
                #expect(try await json(client, .groups(stream: "q"), as: [GroupDescription].self).isEmpty)
            }
        }
    }

    func info(_ client: WireClient, _ stream: String) async throws -> StreamDescription {
        try await client.send(.info(stream: stream))
        guard case .info(let body) = try await client.expectFrame() else { throw TestFailure("INFO: expected JSON") }
        return try JSONDecoder().decode(StreamDescription.self, from: Data(body.readableBytesView))
    }

    @Test func retentionThatWaitsKeepsWhatAGroupNeedsUpToItsHardBound() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { publisher in
                try await publisher.send(
                    .create(stream: "q", options: CreateOptions(capacity: .count(3), keepUnacked: 5)),
                    .create(stream: "plain", options: CreateOptions(capacity: .count(3))))
                #expect(try await publisher.frames(2) == [.ok, .ok])
                try await withWireClient(daemon.socketPath) { member in
                    try await join(member, "q", sid: "s", GroupOptions(group: "g", ackWait: 3600, maxPending: 1))
                    try await join(member, "plain", sid: "p", GroupOptions(group: "g", ackWait: 3600, maxPending: 1))
                    _ = try await publisher.publish("q", (1...6).map { "e\($0)" })
                    _ = try await publisher.publish("plain", (1...6).map { "e\($0)" })
                    // The member holds event 1 of each: q keeps it beyond its capacity of 3;
                    // plain, without keep_unacked, keeps its last 3 whatever the group needs.
                    #expect(try await info(publisher, "q").firstSeq == 1)
                    #expect(try await info(publisher, "q").keepUnacked == 5)
                    #expect(try await info(publisher, "plain").firstSeq == 4)
                    // Four more, in one commit: the limits would keep 8...10, the group needs 1
                    // on; the hard bound keeps 5 beyond the limits, 3...10. (Over several
                    // commits, the one of 9 would free event 1 and hand out event 2, which the
                    // next would then remove from under the member.)
                    try await publisher.send(.atomic((7...10).map { AtomicEvent(stream: "q", payload: ByteBuffer(string: "e\($0)")) }))
                    #expect(try await publisher.expectFrame() == .publishedAll([7, 8, 9, 10]))
                    #expect(try await info(publisher, "q").firstSeq == 3)
                    let pending = try await json(publisher, .pending(stream: "q", group: "g"), as: [PendingDescription].self)
                    #expect(!pending.contains { $0.seq < 3 }, "what retention removed left the pending set")
                    // The member is told what the group lost, and goes on after it.
                    var frames: [ServerFrame] = []
                    while !frames.contains(where: { if case .event("q", _, 3, _, _, _, _, _) = $0 { true } else { false } }) {
                        frames.append(try await member.expectFrame())
                    }
                    #expect(frames.contains(.gap(stream: "q", sid: "s", from: 2, through: 2)))
                    try await member.send(.ack(sid: "s", sequence: 1))
                    var reply = try await member.expectFrame()
                    while case .event = reply { reply = try await member.expectFrame() }
                    guard case .error(let late) = reply else { throw TestFailure("expected -ERR, got \(reply)") }
                    #expect(late.message.contains("not pending"))
                }
            }
        }
    }

    @Test func aPatternGroupPicksUpAStreamCreatedAfterTheSub() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { publisher in
                _ = try await publisher.publish("orders/a", ["a1"])
                try await withWireClient(daemon.socketPath) { member in
                    // An ack wait no stall of the machine reaches: a1 handed out again before its
                    // ACK is read would come between the ACK and its +OK.
                    try await member.send("SUB orders/* s all group=g member=m ack_wait=600\r\n")
                    #expect(try await member.expectFrame() == .ok)
                    guard case .event("orders/a", "s", 1, _, _, _, _, _) = try await member.expectFrame() else { throw TestFailure("expected a1") }
                    try await member.send(.ack(sid: "s", sequence: 1, stream: "orders/a"))
                    let acknowledged = try await member.expectFrame()
                    #expect(acknowledged == .ok, "\(acknowledged)")
                    // A stream created after the SUB: its group is created, from its first event.
                    _ = try await publisher.publish("orders/b", ["b1", "b2"])
                    #expect(try await member.events(2).map(\.1) == ["b1", "b2"])
                    // On a pattern, an ACK names the event's stream, which the pattern matches.
                    let refused: [(ClientCommand, String)] = [
                        (.ack(sid: "s", sequence: 1), "name the event's stream"),
                        (.ack(sid: "s", sequence: 1, stream: "billing"), "does not match"),
                        (.nack(sid: "s", sequence: 1), "name the event's stream"),
                    ]
                    for (command, words) in refused {
                        try await member.send(command)
                        guard case .error(let error) = try await member.expectFrame() else { throw TestFailure("\(command): expected -ERR") }
                        #expect(error.code == .invalidAck && error.message.contains(words), "\(error.message)")
                    }
                    try await member.send(.ack(sid: "s", sequence: 1, stream: "orders/b"), .ack(sid: "s", sequence: 2, stream: "orders/b"))
                    #expect(try await member.frames(2) == [.ok, .ok])
                    let groups = try await json(publisher, .groups(stream: "orders/*"), as: [GroupDescription].self)
                    #expect(groups.map(\.stream) == ["orders/a", "orders/b"])
                    #expect(groups.allSatisfy { $0.name == "g" && $0.pending == 0 && $0.lag == 0 })
                    #expect(groups.first?.members == ["m"])
                }
            }
        }
    }

    @Test func aPatternGroupWhoseSettingsConflictOnOneStreamChangesNothing() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { client in
                _ = try await client.publish("jobs/a", ["a"])
                _ = try await client.publish("jobs/b", ["b"])
                try await join(client, "jobs/b", sid: "one", GroupOptions(group: "g", ackWait: 3600))
                _ = try await client.events(1)
                try await client.send("SUB jobs/* all all group=g ack_wait=7200\r\n")
                guard case .error(let error) = try await client.expectFrame() else { throw TestFailure("expected -ERR") }
                #expect(error.code == .groupConflict && error.message.contains("jobs/b"))
                #expect(try await json(client, .groups(stream: "jobs/a"), as: [GroupDescription].self).isEmpty)
                // The refused SUB's id is free again for the next.
                try await client.send("SUB jobs/* all all group=g ack_wait=3600\r\n")
                #expect(try await client.expectFrame() == .ok)
            }
        }
    }
}
