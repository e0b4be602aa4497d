import NIOCore
import ReplayModel
import ReplayProtocol
import Testing

@Suite("Round trips")
struct RoundTripTests {
    @Test func everyServerFrameDecodesToItself() throws {
        let frames: [ServerFrame] = [
            .hello(version: "0.1.0", maxPayload: 1_048_576),
            .ok, .published(sequence: 42), .pong,
            .error(ReplayError(.unknownStream, "no stream named 'x'; create it first")),
            .info(json: ByteBuffer(string: #"{"name":"x"}"#)),
            .list(json: ByteBuffer(string: "[]")),
            .event(stream: "s", sid: "a", sequence: 7, time: "2026-11-22T03:00:00.000Z", payload: ByteBuffer(string: "two\r\nlines")),
            .event(
                stream: "s", sid: "a", sequence: 8, time: "2026-11-22T03:00:00.000Z", payload: ByteBuffer(string: "k"),
                traceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", key: "customer-7"),
            .event(stream: "s", sid: "a", sequence: 9, time: "2026-11-22T03:00:00.000Z", payload: ByteBuffer(), key: "café"),
            .completed(stream: "s", sid: "a", lastSequence: 7),
            .failed(stream: "s", sid: "a", lastSequence: 7, message: "exit status 1\nstderr tail"),
            .gap(stream: "s", sid: "a", from: 1, through: 5),
        ]
        var buffer = ByteBuffer()
        for frame in frames { frame.write(into: &buffer) }
        var decoder = ServerFrameDecoder()
        var decoded: [ServerFrame] = []
        while let frame = try decoder.next(&buffer) { decoded.append(frame) }
        #expect(decoded == frames)
    }

    /// Every verb, written as a client writes it and read back by the daemon's parser.
    @Test func everyClientCommandDecodesToItself() throws {
        let commands: [ClientCommand] = [
            .publish(stream: "s", payload: ByteBuffer(bytes: [0, 10, 13, 255])),
            .subscribe(stream: "s", sid: "x", start: .since(1_700_000_000.5)),
            .unsubscribe(sid: "x"),
            .windowed(.subscribe(stream: "s", sid: "w", start: .new), window: 64),
            .windowed(.subscribeDurable(stream: "s", sid: "d", start: .from(3), consumer: "audit"), window: 1_000_000),
            .more(sid: "w", count: 32),
            .create(stream: "s", options: CreateOptions(capacity: .count(5), maxBytes: 10, maxAge: 2.5)),
            .create(stream: "src", options: CreateOptions(source: "seq 1 10 | tr 1 x", connect: "refcount", sourceOptions: ["restart": "on-failure"])),
            .delete(stream: "s"), .info(stream: "s"), .list, .subscriptions, .complete(stream: "s"),
            .fail(stream: "s", message: "bad\nthing"), .reset(stream: "s", keepHistory: true), .ping,
            .publishChecked(
                stream: "s", payload: ByteBuffer(string: "x"),
                checks: AppendConditions(expectedLastSequence: 9, producer: ProducerStamp(id: "p", epoch: 2, sequence: 3))),
            .subscribePattern(pattern: try StreamPattern.parse("orders/*").get(), sid: "p", start: .last(2)),
            .subscribeDurable(stream: "s", sid: "d", start: .new, consumer: "audit"),
            .subscribeGroup(
                stream: "s", sid: "g", start: .all,
                options: GroupOptions(group: "workers", member: "m1", ackWait: 2.5, maxDeliver: 3, deadLetter: "dead", maxPending: 10)),
            .subscribePatternGroup(pattern: try StreamPattern.parse("jobs/**").get(), sid: "pg", start: .from(4), options: GroupOptions(group: "w")),
            .filtered(.subscribe(stream: "s", sid: "f", start: .all), program: "select(.amount > 100)"),
            .ack(sid: "g", sequence: 5, stream: nil), .ack(sid: "pg", sequence: 6, stream: "jobs/a"),
            .nack(sid: "g", sequence: 5, stream: "s", delay: 1.5), .nack(sid: "g", sequence: 7, stream: nil, delay: nil),
            .groups(stream: "s"), .pending(stream: "s", group: "workers"), .deleteGroup(stream: "s", group: "workers"),
            .consumers(stream: "s"), .deleteConsumer(stream: "s", name: "audit"),
            .create(stream: "k", options: CreateOptions(capacity: .unlimited, keepUnacked: 100)),
            .create(stream: "t", options: CreateOptions(eventTTL: 0.25)),
            .publishChecked(stream: "s", payload: ByteBuffer(string: "t"), checks: AppendConditions(key: EventKey("k"), ttl: EventTTL(seconds: 30))),
            .publishChecked(stream: "s", payload: ByteBuffer(string: "t"), checks: AppendConditions(ttl: EventTTL(seconds: 0.5))),
            .schedule(
                stream: "jobs", payload: ByteBuffer(string: "j"), due: .after(seconds: 1), annotations: AppendConditions(ttl: EventTTL(seconds: 60))),
            .atomic([AtomicEvent(stream: "a", payload: ByteBuffer(string: "1"), ttl: EventTTL(seconds: 1))]),
            .reset(stream: "s", keepHistory: false),
            .derive(
                stream: "big", definition: #"{"from":["orders"],"jq":"select(.amount > 100)"}"#, options: DeriveOptions(capacity: .count(9), rebuild: true)),
            .derivations, .backup(path: "/var/backups/replay.sqlite"),
            .hashed(.subscribe(stream: "s", sid: "h", start: .all)),
            .latest(stream: "s", key: EventKey("customer-7")!),
            .schedule(stream: "jobs", payload: ByteBuffer(string: "j"), due: .after(seconds: 2.5), annotations: AppendConditions(key: EventKey("k"))),
            .schedule(stream: "jobs", payload: ByteBuffer(), due: .at(millis: 1_800_000_000_123), annotations: AppendConditions()),
            .scheduled(stream: "jobs", limit: 10), .unschedule(stream: "jobs", id: 7),
            .publishChecked(stream: "s", payload: ByteBuffer(string: "v"), checks: AppendConditions(key: EventKey("café"))),
            .atomic([AtomicEvent(stream: "a", payload: ByteBuffer(string: "1"), key: EventKey("k1")), AtomicEvent(stream: "b", payload: ByteBuffer())]),
            .hashed(.windowed(.subscribeDurable(stream: "s", sid: "hw", start: .new, consumer: "audit"), window: 8)),
            .filtered(.hashed(.subscribe(stream: "s", sid: "hf", start: .all)), program: "."),
            .hashed(.subscribePattern(pattern: try StreamPattern.parse("orders/*").get(), sid: "hp", start: .all)),
            .hashed(.subscribeGroup(stream: "s", sid: "hg", start: .all, options: GroupOptions(group: "workers", maxPending: 4))),
            .hashed(.subscribePatternGroup(pattern: try StreamPattern.parse("jobs/**").get(), sid: "hpg", start: .new, options: GroupOptions(group: "w"))),
        ]
        var buffer = ByteBuffer()
        for command in commands { command.write(into: &buffer) }
        var decoder = CommandDecoder()
        var decoded: [InboundCommand] = []
        while let next = try decoder.next(&buffer) { decoded.append(next) }
        #expect(decoded == commands.map { .command($0) })
    }
}
