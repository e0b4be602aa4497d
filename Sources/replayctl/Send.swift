import ArgumentParser
import Foundation
import ReplayClient
import ReplayModel
import ReplayProtocol

struct Send: DaemonCommand, StreamCommand {
    static let configuration = CommandConfiguration(
        abstract: "Publish events to a stream.",
        discussion: """
            Each PAYLOAD argument is one event. With none, each line of standard input is one \
            event, sent pipelined (many in flight), so `seq 1 1000000 | replayctl send s` is fast. \
            Prints the sequence number of each acknowledged event, one per line, in order. Exits 0 \
            only when every event was acknowledged as stored.

            --atomic sends all events of the invocation as one atomic send: all are stored, \
            contiguous, or none. --expect SEQ does too, and stores them only if the stream's \
            last sequence number is SEQ (0: empty or new); otherwise it exits 1 and says \
            wrong_last_seq with the actual one. --producer ID makes the events an idempotent \
            producer's, with pseqs from --pseq (default 0), one per event, in --epoch (default \
            0): repeating an identical invocation stores nothing again and prints the same \
            sequence numbers.

            --key gives every event of the invocation a key: what the events are about \
            (customer-7), stored with them and given back on every read; `replayctl get` \
            finds a key's newest event, and an empty event is the key's tombstone.

            --delay DURATION (30s, 5m, 1h) or --at TIME (2026-12-01T09:00:00Z) schedules the \
            events instead: each is stored at once, as durably as any event, and appended to the \
            stream, with its next sequence number, when its time comes (a time already past: at \
            once). Prints each one's id and due time, one per line; `replayctl scheduled` lists \
            the pending ones and `replayctl unschedule` cancels one. A scheduled event takes \
            --key, --ttl and --traceparent, not --atomic, --expect or --producer.

            --ttl DURATION (30s, 15m, 1d) makes the events expire that long after they are \
            appended: no reader is given an expired event (one that asked for it is told of a \
            gap), and retention removes it. Without it, the stream's --event-ttl applies, if \
            it has one.

            --traceparent gives the events a W3C trace context (by default $TRACEPARENT, \
            the environment's carrier for it): stored with them and handed to whoever reads \
            them, so that their consumers continue the trace.
            """)

    @OptionGroup var connection: ConnectionOptions
    @ParentCommand var root: Replayctl

    @OptionGroup var target: StreamArgument
    @Argument(help: "Payloads, one event each (default: lines of standard input).") var payloads: [String] = []
    @Flag(name: .shortAndLong, help: "Print nothing on success.") var quiet = false
    @Flag(help: "Store every event, or none: one atomic send.") var atomic = false
    @Option(help: ArgumentHelp("Store the events (atomically) only if the stream's last sequence number is SEQ.", valueName: "seq"))
    var expect: UInt64?
    @Option(help: ArgumentHelp("Publish as this idempotent producer.", valueName: "id")) var producer: String?
    @Option(help: "The producer's epoch (with --producer).") var epoch: UInt64?
    @Option(help: "The first event's producer sequence number (with --producer).") var pseq: UInt64?
    @Option(help: ArgumentHelp("The events' W3C trace context (default: $TRACEPARENT).", valueName: "traceparent"))
    var traceparent: String?
    @Option(help: ArgumentHelp("The events' key.", valueName: "key")) var key: String?
    @Option(help: ArgumentHelp("Append the events this long from now: 30s, 5m, 1h.", valueName: "duration")) var delay: String?
    @Option(help: ArgumentHelp("Append the events at this time (RFC 3339).", valueName: "time")) var at: String?
    @Option(help: ArgumentHelp("The events expire this long after they are appended: 30s, 15m, 1d.", valueName: "duration"))
    var ttl: String?

    /// When the events fall due (`--delay`, `--at`, checked by `validate`); `nil`: now.
    var due: DueTime? {
        if let delay { return Duration.seconds(delay).flatMap { DueTime.delay(String($0)) } }
        return at.flatMap(DueTime.time)
    }

    /// The key the events carry (`--key`, checked by `validate`).
    var eventKey: EventKey? { key.flatMap { EventKey($0) } }
    /// How long the events live (`--ttl`, checked by `validate`).
    var eventTTL: EventTTL? { ttl.flatMap(Duration.seconds).flatMap(EventTTL.init(seconds:)) }

    /// The trace context the events carry: `--traceparent`, else `$TRACEPARENT` if it is
    /// one (an environment's that is not is ignored, as a malformed header would be).
    var traceParent: TraceParent? {
        if let traceparent { return TraceParent(traceparent) }
        return ProcessInfo.processInfo.environment["TRACEPARENT"].flatMap { TraceParent($0) }
    }

    func validate() throws {
        if producer == nil, epoch != nil || pseq != nil { throw ValidationError("--epoch and --pseq need --producer") }
        if let traceparent, TraceParent(traceparent) == nil { throw ValidationError("--traceparent takes \(TraceParent.format)") }
        if let key, EventKey(key) == nil { throw ValidationError("--key takes \(EventKey.format)") }
        if ttl != nil, eventTTL == nil { throw ValidationError("--ttl takes a duration such as 30s, 15m or 1d (\(EventTTL.rangeMessage))") }
        if delay != nil || at != nil {
            guard delay == nil || at == nil else { throw ValidationError("give --delay or --at, not both") }
            if let delay, Duration.seconds(delay).flatMap({ DueTime.delay(String($0)) }) == nil {
                throw ValidationError("--delay takes a duration of up to a year: 30s, 5m, 1h")
            }
            if let at, DueTime.time(at) == nil { throw ValidationError("--at takes an RFC 3339 time: 2026-12-01T09:00:00Z") }
            if atomic || expect != nil || producer != nil {
                throw ValidationError("a scheduled event (--delay, --at) takes --key, --ttl and --traceparent, not --atomic, --expect or --producer")
            }
        }
        if producer != nil, atomic || expect != nil {
            throw ValidationError("--producer publishes event by event: it does not combine with --atomic or --expect")
        }
    }

    /// Lines per pipelined write; two writes are in flight while the next is read.
    static let chunk = 4096

    func run(with client: ReplayClient) async throws {
        if atomic || expect != nil { return try await sendAtomically(with: client) }
        if let due { return try await schedule(at: due, with: client) }
        var failures = 0
        var nextPseq = pseq ?? 0
        var pending: PublishBatch?
        func report(_ results: [Result<UInt64, ReplayClientError>]) {
            var out = ""
            for result in results {
                switch result {
                case .success(let sequence): if !quiet { out += "\(sequence)\n" }
                case .failure(let error):
                    failures += 1
                    printError("replayctl: not stored: \(error)")
                }
            }
            if !out.isEmpty { printOut(Data(out.utf8)) }
        }
        var input = payloads.isEmpty ? nil : payloads.map { Data($0.utf8) }
        while true {
            let batch: [Data]
            if let all = input {
                batch = all
                input = []
            } else {
                batch = Self.readLines(max: Self.chunk)
            }
            if batch.isEmpty { break }
            // Written now, in order; acknowledged while the next batch is read.
            let trace = traceParent
            let key = eventKey
            let ttl = eventTTL
            let stamps: [AppendConditions]? =
                if let id = producer {
                    batch.indices.map {
                        AppendConditions(
                            producer: ProducerStamp(id: id, epoch: epoch ?? 0, sequence: nextPseq + UInt64($0)), traceParent: trace, key: key,
                            ttl: ttl)
                    }
                } else if trace != nil || key != nil || ttl != nil {
                    Array(repeating: AppendConditions(traceParent: trace, key: key, ttl: ttl), count: batch.count)
                } else {
                    nil
                }
            nextPseq += UInt64(batch.count)
            let sending = client.startPublishing(stream, contentsOf: batch, checks: stamps)
            if let previous = pending { report(try await previous.results) }
            pending = sending
            if payloads.isEmpty == false, input?.isEmpty == true { break }
        }
        if let last = pending { report(try await last.results) }
        if failures > 0 { throw Exit.refused }
    }

    /// Every event of the invocation in one ATOMIC send, the first expecting `--expect`.
    private func sendAtomically(with client: ReplayClient) async throws {
        let all = payloads.isEmpty ? Self.readLines(max: ProtocolLimits.maxAtomicEvents + 1) : payloads.map { Data($0.utf8) }
        guard !all.isEmpty else { return }
        guard all.count <= ProtocolLimits.maxAtomicEvents else {
            printError("replayctl: an atomic send holds at most \(ProtocolLimits.maxAtomicEvents) events")
            throw Exit.refused
        }
        let trace = traceParent
        let events = all.enumerated().map { index, payload in
            var event = AtomicEvent(stream: stream, payload, expect: index == 0 ? expect : nil)
            event.traceParent = trace
            event.key = eventKey
            event.ttl = eventTTL
            return event
        }
        let sequences: [UInt64]
        do {
            sequences = try await client.publishAtomically(events)
        } catch let error as ReplayClientError {
            printError("replayctl: not stored: \(error)")
            throw Exit.refused
        }
        if !quiet { printOut(Data(sequences.map { "\($0)\n" }.joined().utf8)) }
    }

    /// Every event scheduled for `due`, pipelined a chunk at a time: each one's id and due
    /// time printed as it is stored.
    private func schedule(at due: DueTime, with client: ReplayClient) async throws {
        // The arguments as one batch, or standard input a chunk at a time.
        var arguments = payloads.isEmpty ? nil : payloads.map { Data($0.utf8) }
        while true {
            let batch = arguments ?? Self.readLines(max: Self.chunk)
            if arguments != nil { arguments = [] }
            if batch.isEmpty { break }
            do {
                let scheduled = try await client.schedule(stream, contentsOf: batch, at: due, key: eventKey, ttl: eventTTL)
                if !quiet { printOut(Data(scheduled.map { "\($0.id) \($0.due)\n" }.joined().utf8)) }
            } catch let error as ReplayClientError {
                printError("replayctl: not scheduled: \(error)")
                throw Exit.refused
            }
        }
    }

    static func readLines(max: Int) -> [Data] {
        var lines: [Data] = []
        while lines.count < max, let line = readLine(strippingNewline: true) {
            lines.append(Data(line.utf8))
        }
        return lines
    }
}
