import Foundation
import ReplayModel
import ReplayProtocol
import ReplayStore

/// A SUB of a pattern (`SUB orders/* s1`): one `Subscription` per matching stream, all
/// under one subscription id, and one more for every matching stream created later.
///
/// Each stream is its own cursor, so each stream's events arrive in order, and streams
/// interleave as their events become ready: there is no order across streams, as there is
/// none between two SUBs on one connection. A stream's end (`COMPLETED`, `FAILED`) ends
/// only that stream's part; the pattern's subscription lasts until UNSUB or the
/// connection closes.
///
/// Where it starts: `<start>` applies to each stream that matches when the SUB is taken
/// (`new`: only later events; `last=5`: each stream's last five…), decided in command
/// order like a plain SUB's. A stream created afterwards is read from its first event,
/// since all of it is new to the subscriber.
struct PatternSubscription: Sendable {
    let pattern: StreamPattern
    let sid: String
    let context: ServerContext
    let output: SubscriberOutput
    /// Whether each event carries its hash-chain link (`SUB orders/* s1 hash=on`).
    var hashes = false

    /// The streams matching when the SUB was taken, with their starts, and the watch
    /// that reports the streams created since.
    struct Start: Sendable {
        let existing: [(hub: StreamHub, start: StartPoint?)]
        /// For `since`, resolved per stream when it starts.
        let position: StartPosition
        let appeared: AsyncStream<StreamHub>
        let token: UInt64
    }

    /// Lists the matching streams and watches for new ones, at once and in command order.
    static func start(_ pattern: StreamPattern, _ position: StartPosition, hubs: StreamHubs) -> Start {
        let (appeared, continuation) = AsyncStream.makeStream(of: StreamHub.self)
        let (existing, token) = hubs.watch(pattern) { continuation.yield($0) }
        let starts = existing.filter { !$0.info.isSoftDeleted }.map { hub in (hub, hub.start(position)) }
        return Start(existing: starts, position: position, appeared: appeared, token: token)
    }

    /// Delivers until cancelled (UNSUB, the connection's end).
    func run(_ start: Start) async {
        defer { context.hubs.unwatch(start.token) }
        await withTaskGroup(of: Void.self) { group in
            for (hub, point) in start.existing {
                group.addTask { await deliver(hub, from: point, position: start.position) }
            }
            // Ends when the task is cancelled; the streams' parts end with it.
            for await hub in start.appeared {
                group.addTask { await deliver(hub, from: StartPoint(next: 1, liveAfter: 0), position: .all) }
            }
            group.cancelAll()
        }
    }

    /// One stream's part: a plain subscription of it, with the stream's source leased as
    /// any subscriber's would be.
    private func deliver(_ hub: StreamHub, from point: StartPoint?, position: StartPosition) async {
        var point = point
        if point == nil { point = await since(hub, position) }
        guard let point, !Task.isCancelled else { return }
        let lease = context.lease(hub.name)
        defer { lease.dispose() }
        let log = PooledStore(store: context.store, reads: context.reads)
        await Subscription(
            stream: hub.name, sid: sid, hub: hub, log: log, phase: SubscriptionPhase(stream: hub.name), output: output, hashes: hashes,
            tracer: context.tracer
        )
        .run(from: point.next, liveAfter: point.liveAfter)
    }

    /// A `since` start in one stream, looked up in the store. A lookup that fails (the
    /// store is away) is said on the wire as that stream's failure, and the others go on.
    private func since(_ hub: StreamHub, _ position: StartPosition) async -> StartPoint? {
        guard case .since(let seconds) = position else { return nil }
        let liveAfter = hub.info.lastSequence
        let (store, name) = (context.store, hub.name)
        do {
            let first = try await context.reads.run { try store.firstSequence(name, since: Date(timeIntervalSince1970: seconds)) }
            return StartPoint(next: first, liveAfter: liveAfter)
        } catch {
            let message = "could not find where since= starts: \(ReplayError(error).message)"
            try? await output.write(ServerFrame.failed(stream: name, sid: sid, lastSequence: liveAfter, message: message).bytes)
            return nil
        }
    }
}
