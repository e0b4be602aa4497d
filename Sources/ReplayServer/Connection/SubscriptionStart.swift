import Foundation
import ReplayProtocol
import ReplayStore

/// Where a socket subscription's cursor starts, decided in command order: `SUB s new`
/// then `PUB s` sees the event. One path for plain and durable subscriptions (and the
/// coming groups), so the stream's creation on first use, the `since` lookup and their
/// errors are handled once.
struct SubscriptionStart {
    let context: ServerContext

    /// A subscription's start: from the hub for an existing stream, the whole (empty) log
    /// for a stream this SUB creates, after its acknowledged position for a durable
    /// consumer (or from `start` on its first use).
    func resolve(_ stream: String, _ start: StartPosition, consumer: String?) -> Pending<Result<StartPoint, ReplayError>> {
        let pending = Pending<Result<StartPoint, ReplayError>>()
        guard let hub = context.hubs[stream] else {
            guard context.configuration.autoCreate else { return Pending(.failure(ReplayError(StoreError.unknownStream(stream)))) }
            create(stream, start, consumer: consumer, pending)
            return pending
        }
        let liveAfter = hub.info.lastSequence
        if let consumer {
            // The writer fixes a durable consumer's position, `since=` included (looked up
            // in its transaction), in command order.
            open(consumer, of: stream, first: Self.first(start), pending)
            return pending
        }
        if case .since(let seconds) = start {
            // A plain SUB reads the time on the read pool: after what the writer has
            // committed when the lookup runs, which may include later commands' events;
            // a plain subscription is live from `liveAfter` anyway, so none is missed.
            let (store, reads) = (context.store, context.reads)
            Task {
                do {
                    let first = try await reads.run { try store.firstSequence(stream, since: Date(timeIntervalSince1970: seconds)) }
                    pending.fulfil(.success(StartPoint(next: min(first, liveAfter + 1), liveAfter: liveAfter)))
                } catch {
                    pending.fulfil(.failure(ReplayError(error)))
                }
            }
            return pending
        }
        // The hub resolves every start but `since`.
        return Pending(.success(hub.start(start) ?? StartPoint(next: liveAfter + 1, liveAfter: liveAfter)))
    }

    /// A start on first use, as the writer takes it.
    static func first(_ start: StartPosition) -> FirstPosition {
        if case .since(let seconds) = start { return .since(Date(timeIntervalSince1970: seconds)) }
        return .next { start.next(in: $0) ?? $0.firstSequence }
    }

    /// A SUB of a stream that does not exist, with `--auto-create`: the stream is created
    /// (or found created by a command just before), and everything in it is wanted.
    private func create(_ stream: String, _ start: StartPosition, consumer: String?, _ pending: Pending<Result<StartPoint, ReplayError>>) {
        let next: UInt64 = if case .from(let sequence) = start { max(1, sequence) } else { 1 }
        context.store.create(stream, config: StreamConfig(capacity: context.configuration.defaultCapacity)) { result in
            // A durable consumer opens next, in the writer's order, and reports any failure.
            guard consumer == nil else { return }
            switch result {
            case .success, .failure(.streamExists): pending.fulfil(.success(StartPoint(next: next, liveAfter: 0)))
            case .failure(let error): pending.fulfil(.failure(ReplayError(error)))
            }
        }
        if let consumer { open(consumer, of: stream, first: Self.first(start), pending) }
    }

    /// A durable consumer's position, fixed by the writer: after what it acknowledged, or
    /// `first` on its first use.
    private func open(
        _ consumer: String, of stream: String, first: FirstPosition, _ pending: Pending<Result<StartPoint, ReplayError>>
    ) {
        context.store.openConsumer(consumer, of: stream, first: first) { result in
            pending.fulfil(result.map { StartPoint(next: $0.ackedSequence + 1, liveAfter: $0.lastSequence) }.mapError(ReplayError.init))
        }
    }
}

extension SubscriptionStart {
    /// A group member's start: the group is joined (created at `start` on first use, after
    /// the stream itself with `--auto-create`) by the writer, in command order.
    func join(_ stream: String, _ start: StartPosition, _ options: GroupOptions) -> Pending<Result<GroupJoined, ReplayError>> {
        let pending = Pending<Result<GroupJoined, ReplayError>>()
        let asked = options.asked
        let store = context.store
        if context.hubs[stream] == nil {
            guard context.configuration.autoCreate else { return Pending(.failure(ReplayError(StoreError.unknownStream(stream)))) }
            // The join comes next in the writer's order, and reports any failure.
            store.create(stream, config: StreamConfig(capacity: context.configuration.defaultCapacity)) { _ in }
        }
        // The writer fixes the group's start, `since=` included, in command order.
        store.group(.join(group: options.group, asked: asked, first: Self.first(start)) { pending.fulfil($0.mapError(ReplayError.init)) }, of: stream)
        return pending
    }
}

extension ReplayError {
    /// Any error met while starting a subscription, as the client sees it.
    init(_ error: any Error) {
        switch error {
        case let error as ReplayError: self = error
        case let error as StoreError: self.init(error)
        default: self.init(.internal, "\(error)")
        }
    }
}
