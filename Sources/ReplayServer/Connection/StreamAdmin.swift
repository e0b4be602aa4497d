import Foundation
import NIOCore
import ReplayAuth
import ReplayModel
import ReplayProtocol
import ReplayStore

/// CREATE, DELETE, INFO, GET, LIST, COMPLETE, FAIL, RESET, CONSUMERS, DELCONSUMER, GROUPS,
/// PENDING, DELGROUP, SUBSCRIPTIONS, DERIVE, DERIVATIONS, and the scheduled events: a PUB
/// with `delay=` or `at=`, SCHEDULED and UNSCHEDULE.
///
/// `submit` hands the command to the store's writer before it returns, so a connection's
/// commands take effect in the order they were sent (a PUB after a COMPLETE is refused,
/// an INFO after a PUB sees it). The reply comes later, from the writer's completion.
struct StreamAdmin: Sendable {
    let store: EventStore
    let hubs: StreamHubs
    let sources: SourceRegistry
    let derivations: DerivationRegistry
    let reads: ReadPool
    let defaultCapacity: Int?
    let allowSources: Bool
    /// Whose command this is: LIST shows only the streams it may read.
    var principal = Principal.unrestricted

    func submit(_ command: ClientCommand, reply: @escaping @Sendable (ServerFrame) -> Void) {
        let answer: @Sendable (Result<Void, StoreError>) -> Void = { result in
            switch result {
            case .success: reply(.ok)
            case .failure(let error): reply(.error(ReplayError(error)))
            }
        }
        switch command {
        case .create(let stream, let options):
            do {
                store.create(stream, config: try config(options)) { answer($0.map { _ in }) }
            } catch {
                reply(.error(error))
            }
        case .delete(let stream):
            store.delete(stream, completion: answer)
        case .complete(let stream):
            store.terminate(stream, .completed) { answer($0.map { _ in }) }
        case .fail(let stream, let message):
            store.terminate(stream, .failed(message: message)) { answer($0.map { _ in }) }
        case .reset(let stream, let keepHistory):
            store.reset(stream, keepHistory: keepHistory) { answer($0.map { _ in }) }
        case .deleteConsumer(let stream, let name):
            store.deleteConsumer(name, of: stream, completion: answer)
        case .deleteGroup(let stream, let name):
            store.group(.delete(group: name, answer), of: stream)
        case .derive(let stream, let definition, let options):
            derivations.define(stream, definition: definition, options: options, defaultCapacity: defaultCapacity) { result in
                switch result {
                case .success: reply(.ok)
                case .failure(let error): reply(.error(error))
                }
            }
        case .info(let stream):
            // Its keys counted on the read pool.
            afterWrites(onReadPool: reply) { [self] in
                var description = try describe(stream)
                description.keys = try store.keyCount(of: stream, upTo: StreamDescription.keysCounted)
                return json(description, ServerFrame.info)
            }
        case .list:
            afterWrites(reply) { json(store.streams.filter { !$0.isSoftDeleted && principal.may(.read, on: $0.name) }.map(views.describe), ServerFrame.list) }
        case .consumers(let stream): afterWrites(reply) { () throws(ReplayError) in try json(consumers(of: stream), ServerFrame.list) }
        case .groups(let target): afterWrites(reply) { () throws(ReplayError) in try json(groups(of: target), ServerFrame.list) }
        case .pending(let stream, let name):
            afterWrites(reply) { () throws(ReplayError) in try json(pending(of: name, in: stream), ServerFrame.list) }
        case .derivations: afterWrites(reply) { json(derivations.all.filter { principal.may(.read, on: $0.stream) }, ServerFrame.list) }
        case .latest(let stream, let key):
            // An index lookup and one event's read.
            afterWrites(onReadPool: reply) { [self] in
                try json(KeyedValue.answer(store.latest(stream, key: key), stream: stream, key: key), ServerFrame.info)
            }
        case .schedule(let stream, let payload, let due, let annotations):
            schedule(Data(payload.readableBytesView), to: stream, at: due, annotations, reply: reply)
        case .scheduled(let stream, let limit):
            afterWrites(onReadPool: reply) { [self] in try listScheduled(stream, limit: limit) }
        case .unschedule(let stream, let id):
            store.unschedule(id, of: stream, completion: answer)
        case .subscriptions:
            // The rows as the database has them (written by this daemon's HTTP door or
            // another's); the positions as this daemon knows them.
            afterWrites(onReadPool: reply) { [self] in
                json(try store.subscriptions().compactMap(WakeSubscription.init).map { $0.described(in: store) }, ServerFrame.list)
            }
        case .publish, .publishChecked, .atomic, .subscribe, .subscribePattern, .subscribeDurable, .subscribeGroup, .unsubscribe, .ack,
            .nack, .subscribePatternGroup, .ping, .windowed, .filtered, .hashed, .more, .backup, .verify:
            reply(.error(ReplayError(.internal, "\(command.verb) is not an administration command")))
        }
    }

    /// `afterWrites` for a read that waits on the database: run on the read pool, never on
    /// the writer's thread that passes the barrier.
    func afterWrites(onReadPool reply: @escaping @Sendable (ServerFrame) -> Void, _ read: @escaping @Sendable () throws -> ServerFrame) {
        store.barrier { [reads] result in
            if case .failure(let error) = result { return reply(.error(ReplayError(error))) }
            Task {
                do {
                    reply(try await reads.run(read))
                } catch let error as ReplayError {
                    reply(.error(error))
                } catch {
                    reply(.error(ReplayError((error as? StoreError) ?? .unavailable("\(error)"))))
                }
            }
        }
    }

    /// Answers a reading command once the writer has passed a barrier: this connection's
    /// earlier writes are committed, so an INFO after a PUB sees it.
    private func afterWrites(
        _ reply: @escaping @Sendable (ServerFrame) -> Void, _ read: @escaping @Sendable () throws(ReplayError) -> ServerFrame
    ) {
        store.barrier { result in
            switch result {
            case .failure(let error): reply(.error(ReplayError(error)))
            case .success:
                do throws(ReplayError) {
                    reply(try read())
                } catch {
                    reply(.error(error))
                }
            }
        }
    }

    private func describe(_ stream: String) throws(ReplayError) -> StreamDescription {
        guard let info = store.info(stream), !info.isSoftDeleted else { throw ReplayError(StoreError.unknownStream(stream)) }
        return views.describe(info)
    }

    private func consumers(of stream: String) throws(ReplayError) -> [ConsumerDescription] {
        guard let info = store.info(stream) else { throw ReplayError(StoreError.unknownStream(stream)) }
        return views.consumers(of: info)
    }

    /// The groups of a stream, or of every stream a pattern matches, by stream then name.
    private func groups(of target: String) throws(ReplayError) -> [GroupDescription] {
        let streams: [StreamInfo]
        if StreamPattern.isPattern(target) {
            guard case .success(let pattern) = StreamPattern.parse(target) else {
                throw ReplayError(.badCommand, "bad pattern '\(target.prefix(64))'")
            }
            streams = store.streams.filter { !$0.isSoftDeleted && pattern.matches($0.name) }.sorted { $0.name < $1.name }
        } else {
            guard let info = store.info(target) else { throw ReplayError(StoreError.unknownStream(target)) }
            streams = [info]
        }
        let now = Timestamp.millis(Date())
        return streams.flatMap { views.groups(of: $0, now: now) }
    }

    private func pending(of name: String, in stream: String) throws(ReplayError) -> [PendingDescription] {
        guard let groups = store.groups(of: stream) else { throw ReplayError(StoreError.unknownStream(stream)) }
        guard let group = groups[name] else { throw ReplayError(StoreError.unknownGroup(stream: stream, name: name)) }
        let now = Timestamp.millis(Date())
        return group.pending.sorted { $0.key < $1.key }.map { sequence, delivery in
            PendingDescription(
                stream: stream, seq: sequence, member: delivery.member, lastMember: delivery.lastMember,
                deliveries: delivery.deliveries, idleMs: max(0, now - delivery.lastDelivered))
        }
    }

    private func config(_ options: CreateOptions) throws(ReplayError) -> StreamConfig {
        if options.source != nil, !allowSources {
            throw ReplayError(.forbidden, "this replayd does not accept sources over the socket (--no-socket-sources)")
        }
        return try options.streamConfig(defaultCapacity: defaultCapacity)
    }

    /// INFO, LIST, CONSUMERS and GROUPS show a stream as every view does.
    var views: StreamViews { StreamViews(hubs: hubs, store: store, sources: sources, derivations: derivations) }

    /// `value` as JSON, in the reply `frame` makes of it.
    func json<T: Encodable>(_ value: T, _ frame: (ByteBuffer) -> ServerFrame) -> ServerFrame {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(value) else { return .error(ReplayError(.internal, "could not encode JSON")) }
        return frame(ByteBuffer(bytes: data))
    }
}
