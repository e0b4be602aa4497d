import Foundation
import NIOCore
import ReplayModel
import ReplayProtocol
import ReplayTesting
import Testing

/// An event's key: stored with it (a column `sqlite3` reads), given back on every read of
/// the socket (live, from the log, to a group's member, into a dead-letter stream), covered
/// by its hash-chain link, and looked up by `GET` (the key's current value); on both stores.
@Suite("replayd: event keys", .timeLimit(.minutes(5)))
struct EventKeyTests {
    @Test func aKeyedPublishIsGivenBackLiveFromTheLogAndInTheRow() async throws {
        try await withTemporaryDirectory { directory in
            let daemon = try await TestDaemon.start(in: directory)
            try await withWireClient(daemon.socketPath) { client in
                try await client.subscribe("customers", sid: "live")
                try await client.send("PUB customers key=customer-7 4\r\ngold\r\nPUB customers 5\r\nplain\r\nPUB customers key=café 1\r\nx\r\n")
                let frames = try await client.frames(6)
                #expect(frames.keyedEvents == [KeyedEvent(1, "gold", "customer-7"), KeyedEvent(2, "plain", nil), KeyedEvent(3, "x", "café")])
            }
            #expect(await daemon.stop() == 0)
            let rows = try await runProgram(
                "/usr/bin/env", ["sqlite3", directory + "/replay.sqlite", "SELECT seq, payload, quote(key) FROM events ORDER BY seq"])
            #expect(rows.stdout == "1|gold|'customer-7'\n2|plain|NULL\n3|x|'café'\n", "the row holds it, and the view shows it")
            let again = try await TestDaemon.start(in: directory)
            defer { Task { await again.stop() } }
            try await withWireClient(again.socketPath) { client in
                try await client.send(.subscribe(stream: "customers", sid: "log", start: .all))
                #expect(
                    try await client.frames(4).keyedEvents == [
                        KeyedEvent(1, "gold", "customer-7"), KeyedEvent(2, "plain", nil), KeyedEvent(3, "x", "café"),
                    ])
            }
        }
    }

    @Test func getAnswersAKeysNewestEventAndATombstoneDeletesIt() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { client in
                try await client.send(
                    "PUB c key=a 2\r\na1\r\nPUB c key=b 2\r\nb1\r\nPUB c key=a 2\r\na2\r\nPUB c 5\r\nnokey\r\n"
                        + "GET c a\r\nGET c b\r\nGET c nobody\r\nGET missing a\r\n")
                let frames = try await client.frames(8)
                #expect(try Self.value(frames[4]) == KeyedValue(stream: "c", key: "a", seq: 3, time: Self.time(frames[4]), payload: Data("a2".utf8)))
                #expect(try Self.value(frames[5]).seq == 2 && Self.value(frames[5]).text == "b1")
                #expect(Self.code(frames[6]) == .unknownKey, "\(frames[6])")
                #expect(Self.code(frames[7]) == .unknownStream, "\(frames[7])")

                // An empty payload is the key's tombstone: GET no longer finds a value.
                try await client.send("PUB c key=a 0\r\n\r\nGET c a\r\nGET c b\r\n")
                let after = try await client.frames(3)
                #expect(after[0] == .published(sequence: 5))
                guard case .error(let error) = after[1] else { throw TestFailure("a deleted key was found: \(after[1])") }
                #expect(error.code == .unknownKey && error.message.contains("tombstone at seq 5"), "\(error)")
                #expect(try Self.value(after[2]).text == "b1", "other keys keep their values")
                // A GET comes after the connection's earlier PUBs: a key published again is back.
                try await client.send("PUB c key=a 2\r\na3\r\nGET c a\r\n")
                let back = try await client.frames(2)
                #expect(try Self.value(back[1]).seq == 6 && Self.value(back[1]).text == "a3")
                // INFO counts the keys that have a value; LIST does not count.
                try await client.send("PUB c key=b 0\r\n\r\nINFO c\r\nLIST\r\n")
                let described = try await client.frames(3)
                guard case .info(let info) = described[1], case .list(let list) = described[2] else { throw TestFailure("\(described)") }
                #expect(try JSONDecoder().decode(StreamDescription.self, from: Data(buffer: info)).keys == 1, "a; b was deleted")
                #expect(try JSONDecoder().decode([StreamDescription].self, from: Data(buffer: list)).first?.keys == nil)
            }
        }
    }

    @Test func aMalformedKeyIsRefusedAndNothingIsStored() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { client in
                let long = String(repeating: "k", count: EventKey.maxBytes + 1)
                for bad in ["key= 1", "key=\(long) 1", "key=a\u{7F}b 1"] {
                    try await client.send("PUB orders \(bad)\r\nx\r\n")
                    guard case .error(let error) = try await client.expectFrame() else { throw TestFailure("\(bad) was accepted") }
                    #expect(error.code == .badCommand && error.message.contains("key="), "\(error)")
                }
                try await client.send("GET orders *\r\nGET orders/* a\r\n")
                #expect(Self.code(try await client.expectFrame()) == .unknownStream, "a valid key of a stream that does not exist")
                #expect(Self.code(try await client.expectFrame()) == .badCommand, "GET takes one stream")
                #expect(try await client.publish("orders", ["ok"]) == [1], "nothing was stored before it")
            }
        }
    }

    @Test func anAtomicSendAGroupMemberAndTheDeadLetterCopyKeepKeys() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { client in
                try await client.send("ATOMIC 2\r\nPUB jobs key=j1 1\r\nx\r\nPUB jobs key=j2 1\r\ny\r\n")
                #expect(try await client.expectFrame() == .publishedAll([1, 2]))
                try await client.send(
                    .subscribeGroup(stream: "jobs", sid: "w", start: .all, options: GroupOptions(group: "g", maxDeliver: 1, deadLetter: "dead")))
                let handedOut = try await client.frames(3)
                #expect(handedOut.keyedEvents == [KeyedEvent(1, "x", "j1"), KeyedEvent(2, "y", "j2")])
                try await client.send(.nack(sid: "w", sequence: 1))
                #expect(try await client.expectFrame() == .ok)
                try await client.send(.subscribe(stream: "dead", sid: "d", start: .all))
                #expect(try await client.frames(2).keyedEvents == [KeyedEvent(1, "x", "j1")])
            }
        }
    }

    /// The key is part of what the chain covers: a key changed in the database fails the
    /// event's read and `verify`, as a changed payload does.
    @Test func anEditedKeyBreaksTheChain() async throws {
        try await withTemporaryDirectory { directory in
            let daemon = try await TestDaemon.start(in: directory)
            defer { Task { await daemon.stop() } }
            try await withWireClient(daemon.socketPath) { client in
                try await client.send("PUB c key=a 1\r\n1\r\nPUB c key=b 1\r\n2\r\n")
                _ = try await client.frames(2)
            }
            let edit = try await runProgram(
                "/usr/bin/env", ["sqlite3", directory + "/replay.sqlite", "UPDATE event_log SET event_key = 'z' WHERE event_key = 'b'"])
            #expect(edit.status == 0, "\(edit.stderr)")
            try await withWireClient(daemon.socketPath) { client in
                try await client.send(.verify(streams: ["c"]))
                guard case .list(let json) = try await client.expectFrame() else { throw TestFailure("no VERIFY report") }
                let reports = try JSONDecoder().decode([ChainReport].self, from: Data(buffer: json))
                #expect(reports.first?.broken?.sequence == 2, "\(reports)")
                // GET finds the key's newest event by its own row, which still names event
                // 2: reading it fails.
                try await client.send("GET c b\r\n")
                guard case .error(let error) = try await client.expectFrame() else { throw TestFailure("a corrupt event was answered") }
                #expect(error.code == .corruptEvent, "\(error)")
                // A snapshot sends the good events before the corrupt one, then stops on it.
                try await client.send("SUB c s snapshot\r\n")
                let frames = try await client.frames(3)
                #expect(frames[0] == .ok && frames.keyedEvents == [KeyedEvent(1, "1", "a")], "\(frames)")
                guard case .subscriptionError(_, "s", let stopped) = frames[2] else { throw TestFailure("no ERROR frame: \(frames)") }
                #expect(stopped.code == .corruptEvent)
            }
        }
    }

    @Test func onPostgreSQLItIsStoredReadBackAndLookedUp() async throws {
        try await TestPostgres.withDatabase { url in
            try await withDaemon(database: url) { daemon in
                try await withWireClient(daemon.socketPath) { client in
                    try await client.send("PUB c 1\r\na\r\nPUB c key=k 1\r\nb\r\nPUB c key=k 1\r\nc\r\nPUB c key=j 1\r\nd\r\n")
                    _ = try await client.frames(4)
                    // From the log: the page PostgreSQL packs carries each event's key.
                    try await client.send(.subscribe(stream: "c", sid: "s", start: .all))
                    #expect(
                        try await client.frames(5).keyedEvents == [
                            KeyedEvent(1, "a", nil), KeyedEvent(2, "b", "k"), KeyedEvent(3, "c", "k"), KeyedEvent(4, "d", "j"),
                        ])
                    try await client.send(.unsubscribe(sid: "s"))
                    #expect(try await client.expectFrame() == .ok)
                    try await client.send("GET c k\r\nPUB c key=j 0\r\n\r\nGET c j\r\n")
                    let frames = try await client.frames(3)
                    #expect(try Self.value(frames[0]).seq == 3 && Self.value(frames[0]).text == "c")
                    #expect(Self.code(frames[2]) == .unknownKey, "\(frames[2])")
                    try await client.send(.info(stream: "c"))
                    guard case .info(let info) = try await client.expectFrame() else { throw TestFailure("no INFO") }
                    #expect(try JSONDecoder().decode(StreamDescription.self, from: Data(buffer: info)).keys == 1, "k; j was deleted")
                    try await client.send(.verify(streams: ["c"]))
                    guard case .list(let json) = try await client.expectFrame() else { throw TestFailure("no VERIFY report") }
                    #expect(try JSONDecoder().decode([ChainReport].self, from: Data(buffer: json)).first?.broken == nil)
                }
            }
            #expect(try await TestPostgres.psql(url, "SELECT seq, coalesce(key, '-') FROM events ORDER BY seq") == "1|-\n2|k\n3|k\n4|j\n5|j")
        }
    }

    /// A derived stream is keyed as its events are about: a filter's outputs keep their
    /// input's key, a keyed scan's carry the scan key, so `GET` and a snapshot read a
    /// running total per customer as a table.
    @Test func derivedStreamsCarryKeys() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { client in
                let filter = #"{"inputs": ["orders"], "program": "select(.amount > 100)"}"#
                let totals = #"{"inputs": ["orders"], "program": ".state + .event.amount", "scan": "0", "scan_key": ".customer"}"#
                try await client.send("DERIVE big \(filter.utf8.count)\r\n\(filter)\r\nDERIVE totals \(totals.utf8.count)\r\n\(totals)\r\n")
                #expect(try await client.frames(2) == [.ok, .ok])
                let orders = [("ada", 120), ("bob", 40), ("ada", 300)]
                for (customer, amount) in orders {
                    let body = #"{"customer":"\#(customer)","amount":\#(amount)}"#
                    try await client.send("PUB orders key=\(customer) \(body.utf8.count)\r\n\(body)\r\n")
                }
                _ = try await client.frames(3)
                try await client.send(.subscribe(stream: "big", sid: "b", start: .all))
                #expect(try await client.frames(3).keyedEvents.map(\.key) == ["ada", "ada"])
            }
            // Once the derivation has computed all three (it runs beside the publishers).
            try await withWireClient(daemon.socketPath) { client in
                try await client.send(.subscribe(stream: "totals", sid: "all", start: .all))
                #expect(try await client.frames(4).keyedEvents.map(\.key) == ["ada", "bob", "ada"])
            }
            try await withWireClient(daemon.socketPath) { client in
                try await client.send(.subscribe(stream: "totals", sid: "t", start: .snapshot))
                let snapshot = try await client.frames(3)
                #expect(snapshot.keyedEvents.map(\.key) == ["bob", "ada"], "each customer's latest total, in sequence order")
                try await client.send("GET totals ada\r\n")
                guard case .info(let json) = try await client.expectFrame() else { throw TestFailure("no GET answer") }
                let value = try JSONDecoder().decode(KeyedValue.self, from: Data(buffer: json))
                #expect(value.text == #"{"key":"ada","state":420}"#, "\(value)")
            }
        }
    }

    /// replayctl: `send --key`, `get` (and `--json`), `subscribe --json`.
    @Test func replayctlSendsGetsAndShowsKeys() async throws {
        try await withDaemon { daemon in
            func replayctl(_ arguments: String...) async throws -> (status: Int32, stdout: String, stderr: String) {
                try await runProgram(try builtExecutable("replayctl"), arguments + ["--socket", daemon.socketPath])
            }
            #expect(try await replayctl("send", "prices", "--key", "AAPL", "190", "191").stdout == "1\n2\n")
            #expect(try await replayctl("send", "prices", "--key", "MSFT", "420").status == 0)
            #expect(try await replayctl("get", "prices", "AAPL").stdout == "191\n")
            let json = try await replayctl("get", "prices", "MSFT", "--json").stdout
            #expect(json.contains(#""key":"MSFT""#) && json.contains(#""payload":"420""#) && json.contains(#""seq":3"#), "\(json)")
            #expect(try await replayctl("info", "prices").stdout.contains("keys         2\n"))
            let missing = try await replayctl("get", "prices", "GOOG")
            #expect(missing.status == 1 && missing.stdout.isEmpty && missing.stderr.contains("no current value"))
            #expect(try await replayctl("send", "prices", "--key", "bad key", "1").status != 0, "a key is one word")
            let lines = try await replayctl("subscribe", "prices", "--json", "--count", "3").stdout.split(separator: "\n")
            #expect(lines.count == 3 && lines[0].contains(#""key":"AAPL""#) && lines[2].contains(#""key":"MSFT""#), "\(lines)")
            // A snapshot: AAPL's newest and MSFT's, not AAPL's first.
            #expect(try await replayctl("subscribe", "prices", "--snapshot", "--count", "2").stdout == "191\n420\n")
            #expect(try await replayctl("subscribe", "prices", "--snapshot", "--group", "g").status != 0, "not for a group")
        }
    }

    private static func value(_ frame: ServerFrame) throws -> KeyedValue {
        guard case .info(let json) = frame else { throw TestFailure("not a GET's answer: \(frame)") }
        return try JSONDecoder().decode(KeyedValue.self, from: Data(buffer: json))
    }

    private static func time(_ frame: ServerFrame) throws -> String { try value(frame).time }

    private static func code(_ frame: ServerFrame) -> ReplayError.Code? {
        guard case .error(let error) = frame else { return nil }
        return error.code
    }
}

/// An event as these tests compare it.
struct KeyedEvent: Equatable, CustomStringConvertible {
    let sequence: UInt64
    let payload: String
    let key: String?

    init(_ sequence: UInt64, _ payload: String, _ key: String?) {
        self.sequence = sequence
        self.payload = payload
        self.key = key
    }

    var description: String { "\(sequence):\(payload):\(key ?? "-")" }
}

extension [ServerFrame] {
    /// The events among the frames, with their keys, in order.
    var keyedEvents: [KeyedEvent] {
        compactMap { frame in
            guard case .event(_, _, let sequence, _, let payload, _, _, let key) = frame else { return nil }
            return KeyedEvent(sequence, String(buffer: payload), key)
        }
    }
}
