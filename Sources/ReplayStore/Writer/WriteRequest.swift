import Foundation
import ReplayModel

/// One unit of work for the writer. Each carries its completion, called on the writer's
/// thread after the transaction that contains it has committed (or failed).
///
/// Every request is copied into the queue and into its batch, so the enum's size (its
/// largest case) is paid by each PUB: the large, rarer cases are `indirect` (boxed), and
/// an append does not carry the store's auto-creation settings (a 145-byte `StreamConfig?`,
/// the same for every append: the writer's rules hold them). That took the enum from 328
/// bytes to 104 (`WriteRequestSizeTests` keeps it within 128). With 328, 4 × 200,000
/// pipelined PUBs took 7 % more daemon CPU than at 624a989, `memmove` 7 % of the samples
/// against 4 %.
enum WriteRequest: Sendable {
    typealias Completion<T> = @Sendable (Result<T, StoreError>) -> Void

    /// An append told to its own completion (sources, the Swift API).
    case appendWithCompletion(stream: String, payload: Data, Completion<StoredEvent>)
    /// An append whose result goes to `sink` with the batch's others (see `AppendSink`).
    case appendToSink(stream: String, payload: Data, conditions: AppendConditions, sink: any AppendSink, token: UInt64)
    /// Appends that commit all or none; one result, with every sequence number.
    case atomic(events: [AtomicAppend], sink: any AppendSink, token: UInt64)
    /// A write of several events with a writer sequence, a producer stamp and a close
    /// (`StreamWrite`): one unit, all or none.
    indirect case streamWrite(StreamWrite, Completion<StreamWriteOutcome>)
    /// A durable consumer's position, created at `first` on first use.
    case openConsumer(stream: String, name: String, first: FirstPosition, Completion<ConsumerStart>)
    case acknowledge(stream: String, consumer: String, sequence: UInt64, Completion<Void>)
    case deleteConsumer(stream: String, name: String, Completion<Void>)
    /// A consumer group's request; `deadLetter` is the group's dead-letter stream, if it
    /// has one (a shared database locks it with the rest).
    indirect case group(stream: String, deadLetter: String?, GroupRequest)
    indirect case create(stream: String, config: StreamConfig, Completion<StreamInfo>)
    case delete(stream: String, Completion<Void>)
    case terminate(stream: String, Terminal, Completion<StreamInfo>)
    case reset(stream: String, keepHistory: Bool, Completion<StreamInfo>)
    /// Removes expired events (`WriterRules.expireEvents`): answered `true` if more are
    /// expired than one batch removes.
    case expireEvents(Completion<Bool>)
    /// One step of a compaction pass: runs of a compacted stream's events that may go
    /// (`WriterRules.removeCompacted`); answered with the events removed.
    case removeCompacted(stream: String, runs: [ClosedRange<UInt64>], finishesPass: Bool, Completion<Int>)
    /// Events `from...through` removed, from inside the window or its front (`EventHole`).
    case removeEvents(stream: String, from: UInt64, through: UInt64, Completion<StreamInfo>)
    case enforceRetention(Completion<Void>)
    /// Completes once every request queued before it has committed.
    case barrier(Completion<Void>)
    /// Serves the group members waiting for work whose groups' time came (a held event's
    /// time ran out, a given-back event's delay ended): `WaitingMembers`' alarm.
    case serveDueWaiters
    /// Another daemon changed these streams (a shared database): reads their rows again,
    /// and takes the `bounds` its notice gave for others as they are.
    case refresh(streams: [String], bounds: [String: StreamBounds] = [:])
    /// A subscription's row written or removed, if it is still as its writer read it.
    case subscription(SubscriptionWrite, Completion<SubscriptionWritten>)
    /// A derivation created or redefined (its derived stream created if new).
    indirect case defineDerivation(DerivationDefinition, Completion<Derivation>)
    /// A derivation's outputs, state and positions, all or none.
    indirect case derivationStep(DerivationStep, Completion<Derivation>)
    /// An event stored now and appended to its stream when it falls due.
    indirect case schedule(ScheduleRequest, Completion<ScheduledEvent>)
    /// A scheduled event cancelled before it fell due.
    case unschedule(stream: String, id: Int64, Completion<Void>)
    /// Appends the scheduled events whose time came (`ScheduledAlarm`).
    case appendDueEvents
    /// A scheduled source's tick: answered `true` if the stream's last tick was before
    /// `tick` (ms) and is now `tick`, so this daemon runs it; `false` if it ran already.
    case sourceTick(stream: String, tick: Int64, Completion<Bool>)
    /// The daemon's signing key: `candidate` is kept if there is none yet; answered with
    /// the one kept (another daemon's, on a shared database, if it came first).
    case signingKey(candidate: SigningKey, Completion<SigningKey>)

    /// Whether its client sends nothing more until this is answered: an HTTP append,
    /// one in flight on its connection. The writer waits a moment for the others like it
    /// (`WriteQueue`), where a pipelined PUB's client keeps sending anyway.
    var isRoundTrip: Bool {
        if case .streamWrite = self { return true }
        return false
    }

    /// The streams the request names (a shared database locks them up front, in order).
    var streamNames: [String] {
        switch self {
        case .appendWithCompletion(let stream, _, _), .appendToSink(let stream, _, _, _, _), .openConsumer(let stream, _, _, _),
            .acknowledge(let stream, _, _, _), .deleteConsumer(let stream, _, _), .create(let stream, _, _),
            .delete(let stream, _), .terminate(let stream, _, _), .reset(let stream, _, _), .removeEvents(let stream, _, _, _), .unschedule(let stream, _, _),
            .removeCompacted(let stream, _, _, _),
            .sourceTick(let stream, _, _):
            [stream]
        case .group(let stream, let deadLetter, _): [stream] + (deadLetter.map { [$0] } ?? [])
        case .atomic(let events, _, _): events.map(\.stream)
        case .streamWrite(let write, _): [write.stream] + (write.fork.map { [$0.source] } ?? [])
        case .defineDerivation(let definition, _): [definition.stream]
        case .schedule(let request, _): [request.stream]
        case .derivationStep(let step, _): [step.stream] + (step.deadLetterStream.map { [$0] } ?? [])
        // The due events' streams are found in the table as the batch begins (`lockUpFront`).
        case .enforceRetention, .expireEvents, .barrier, .refresh, .serveDueWaiters, .subscription, .signingKey, .appendDueEvents: []
        }
    }

    var payloadSize: Int {
        switch self {
        case .appendWithCompletion(_, let payload, _), .appendToSink(_, let payload, _, _, _): payload.count
        case .atomic(let events, _, _): events.reduce(0) { $0 + $1.payload.count }
        case .streamWrite(let write, _): write.payloads.reduce(0) { $0 + $1.count }
        case .schedule(let request, _): request.payload.count
        default: 0
        }
    }

    /// Fails the request; a `publish` joins `sinks`, to be told with its batch.
    func fail(_ error: StoreError, sinks: inout SinkResults) {
        if case .appendToSink(_, _, _, let sink, let token) = self {
            sinks.add(sink, AppendResult(token: token, sequence: .failure(error)))
        } else if case .atomic(_, let sink, let token) = self {
            sinks.add(sink, AppendResult(token: token, sequence: .failure(error)))
        } else {
            fail(error)
        }
    }

    func fail(_ error: StoreError) {
        switch self {
        case .appendToSink(_, _, _, let sink, let token), .atomic(_, let sink, let token):
            sink.appended([AppendResult(token: token, sequence: .failure(error))])
        case .streamWrite(_, let done): done(.failure(error))
        case .openConsumer(_, _, _, let done): done(.failure(error))
        case .acknowledge(_, _, _, let done): done(.failure(error))
        case .deleteConsumer(_, _, let done): done(.failure(error))
        case .group(_, _, let request): request.fail(error)
        case .appendWithCompletion(_, _, let done): done(.failure(error))
        case .create(_, _, let done): done(.failure(error))
        case .delete(_, let done): done(.failure(error))
        case .terminate(_, _, let done): done(.failure(error))
        case .reset(_, _, let done): done(.failure(error))
        case .removeEvents(_, _, _, let done): done(.failure(error))
        case .removeCompacted(_, _, _, let done): done(.failure(error))
        case .enforceRetention(let done): done(.failure(error))
        case .expireEvents(let done): done(.failure(error))
        case .barrier(let done): done(.failure(error))
        case .subscription(_, let done): done(.failure(error))
        case .signingKey(_, let done): done(.failure(error))
        case .defineDerivation(_, let done): done(.failure(error))
        case .derivationStep(_, let done): done(.failure(error))
        case .schedule(_, let done): done(.failure(error))
        case .unschedule(_, _, let done): done(.failure(error))
        case .sourceTick(_, _, let done): done(.failure(error))
        case .refresh, .serveDueWaiters, .appendDueEvents: break
        }
    }
}

/// Where a durable consumer resumes: after `ackedSequence`; `lastSequence` is the stream's
/// when it was opened (later events are live).
public struct ConsumerStart: Sendable, Equatable {
    public let ackedSequence: UInt64
    public let lastSequence: UInt64
}
