import Foundation
import Logging
import ReplayModel
import ReplayStore
import Synchronization

/// The Durable Streams subscriptions of this daemon (§6–7): each a durable cursor over the
/// streams its pattern matches and the streams it names, that wakes its workers when a
/// linked stream has events past the cursor. A wake has a generation; the one worker that
/// holds it (a pull-wake worker's claim, or the webhook receiver) acknowledges positions
/// with a token for that generation, and a stale generation is fenced.
///
/// One actor: every decision (a wake, a claim, a fence) is made in one step on the state
/// in memory, with no suspension between reading and changing it, then written through the
/// store's writer before it is answered. The positions themselves are durable consumers of
/// each stream (named `__ds/<id>`), so `replayctl consumers` shows them and retention and
/// PostgreSQL treat them as any consumer.
///
/// This file holds the state and how it changes (`change`, one at a time); the rest is in
/// files by concern beside it: the control API (`+Control`), wakes and workers (`+Wakes`),
/// webhook deliveries and alarms (`+Webhooks`), and the JSON answers (`+JSON`). Only they
/// touch the state below, which is why it is not `private`.
actor Subscriptions {
    let store: EventStore
    let reads: ReadPool
    let keys: SigningKeys
    let webhooks: WebhookSender
    /// A webhook delivery's span (`--otlp-endpoint`), or `.off`.
    let tracer: EventTracer
    let logger: Logger
    /// Whether other daemons write the same rows (a shared PostgreSQL database): each
    /// decision then starts from the row as the database has it, and the list is read again
    /// every `reloadInterval` to learn of subscriptions made elsewhere.
    let shared: Bool
    static let reloadInterval: Duration = .seconds(1)
    /// The URL clients reach this door at: callback URLs and `jwks_url` are made from it.
    private(set) var baseURL: String
    var subscriptions: [String: WakeSubscription] = [:] {
        didSet { counted() }
    }
    /// PUTs in progress: a subscription being created watches its streams already.
    var creating = 0 {
        didSet { counted() }
    }
    /// Whether any subscription exists (or is being created): read on the writer's thread
    /// by every commit, so that a daemon without subscriptions pays nothing for them (a
    /// wake-up of the task that tells them was a thread switch per commit, measurable
    /// under HTTP appends).
    nonisolated let watching = Atomic<Bool>(false)
    /// Each subscription's alarm: its lease's end or its next webhook attempt.
    var alarms: [String: Task<Void, Never>] = [:]
    var reloading: Task<Void, Never>?
    /// Webhook deliveries in flight, so that a stop can wait for their outcomes to be written.
    var deliveries: [Int: Task<Void, Never>] = [:]
    var nextDelivery = 0
    /// Set by `stop()`: a delivery that fails from now on was cut short by the shutdown (the
    /// receiver may well have it), not refused by its receiver.
    var stopping = false
    /// One change at a time (`exclusively`): a change reads, decides, and writes with a
    /// suspension at the write, and another change of the same row must not decide on the
    /// state before that write is known to have won.
    var changing = false
    var waitingToChange: [CheckedContinuation<Void, Never>] = []

    init(
        store: EventStore, reads: ReadPool, keys: SigningKeys, webhooks: WebhookSender, baseURL: String, tracer: EventTracer = .off,
        logger: Logger
    ) async throws {
        self.store = store
        self.tracer = tracer
        self.reads = reads
        self.keys = keys
        self.webhooks = webhooks
        self.baseURL = baseURL
        self.logger = logger
        shared = store.isShared
        for row in try await reads.run({ try store.subscriptions() }) {
            guard let subscription = WakeSubscription(row) else {
                logger.error("subscription '\(row.id)': its row cannot be read by this build; left as it is")
                continue
            }
            subscriptions[row.id] = subscription
        }
        counted()  // (an initializer's assignments do not call `didSet`)
    }

    /// After a restart: alarms again, an interrupted delivery sent again, and a wake for
    /// work that arrived while the daemon was down.
    func resume(baseURL: String) async {
        self.baseURL = baseURL
        for id in subscriptions.keys.sorted() {
            // A delivery in flight when the daemon stopped is due again at its watchdog time.
            schedule(id)
            await wakeIfPending(id, triggeredBy: nil)
        }
        if shared && reloading == nil {
            reloading = Task { [weak self] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: Self.reloadInterval)
                    await self?.reload()
                }
            }
        }
    }

    /// What follows from the subscriptions there are: `watching`, and the gauge.
    private func counted() {
        watching.store(!subscriptions.isEmpty || creating > 0, ordering: .relaxed)
        SubscriptionMetrics.subscriptions.set(subscriptions.count)
    }

    /// No more alarms. Deliveries in flight go on until the webhook client is shut down; then
    /// `finishDeliveries()` waits for their outcomes.
    func stop() {
        stopping = true
        for alarm in alarms.values { alarm.cancel() }
        alarms = [:]
        reloading?.cancel()
    }

    /// After the webhook client's shutdown: every delivery's outcome is written.
    func finishDeliveries() async {
        while let (_, delivery) = deliveries.first {
            await delivery.value
        }
    }

    /// Learns the subscriptions other daemons made, changed or removed.
    func reload() async {
        guard let rows = try? await reads.run({ [store] in try store.subscriptions() }) else { return }
        let seen = Set(rows.map(\.id))
        // Adopted only: wakes follow commits and alarms. (This daemon's copy of the streams'
        // positions may lag the daemon that just wrote the row; deciding a wake on it here
        // could wake for work already done.)
        for row in rows where (subscriptions[row.id]?.revision ?? 0) < row.revision {
            guard let subscription = WakeSubscription(row) else { continue }
            subscriptions[row.id] = subscription
            schedule(row.id)
        }
        for id in subscriptions.keys where !seen.contains(id) && subscriptions[id]!.revision > 0 {
            subscriptions[id] = nil
            alarms.removeValue(forKey: id)?.cancel()
        }
    }

    // MARK: Changes

    /// Runs `body` with no other change in progress.
    func exclusively<T>(_ body: () async throws(HTTPProblem) -> T) async throws(HTTPProblem) -> T {
        while changing { await withCheckedContinuation { waitingToChange.append($0) } }
        changing = true
        defer {
            changing = false
            if !waitingToChange.isEmpty { waitingToChange.removeFirst().resume() }
        }
        return try await body()
    }

    /// Reads the row again where other daemons write it too.
    func refresh(_ id: String) async throws(HTTPProblem) {
        guard shared else { return }
        let row: SubscriptionRow?
        do {
            row = try await reads.run { [store] in try store.subscription(id) }
        } catch {
            throw HTTPProblem((error as? StoreError) ?? .unavailable("\(error)"))
        }
        adopt(row, id: id)
    }

    /// The row as the database has it, in memory.
    func adopt(_ row: SubscriptionRow?, id: String) {
        if let row, let subscription = WakeSubscription(row) {
            subscriptions[id] = subscription
        } else {
            subscriptions[id] = nil
            alarms.removeValue(forKey: id)?.cancel()
        }
        schedule(id)
    }

    /// The one way a subscription changes: `decide` on its current state (read again from
    /// the database where it is shared), then its row written if it is still as read. A
    /// write that lost to another daemon's decides again on what that one wrote. Callers
    /// hold `exclusively`.
    @discardableResult
    func change<T>(_ id: String, _ decide: (inout WakeSubscription) throws(HTTPProblem) -> T) async throws(HTTPProblem) -> T {
        for _ in 0..<16 {
            try await refresh(id)
            guard var subscription = subscriptions[id] else { throw .notFound(subscription: id) }
            let result = try decide(&subscription)
            guard subscription.state != subscriptions[id]?.state else { return result }
            let write = SubscriptionWrite(id: id, contents: subscription.contents, expected: subscription.revision == 0 ? nil : subscription.revision)
            switch try await run({ done in store.write(write, completion: done) }) {
            case .written(let revision):
                subscription.revision = revision
                subscriptions[id] = subscription
                schedule(id)
                return result
            case .changed(let row):
                adopt(row, id: id)
            }
        }
        throw HTTPProblem.busy("subscription '\(id)' kept changing under this request; try again")
    }

    /// A store call, its failure in the protocol's words.
    func run<T: Sendable>(_ start: (@escaping @Sendable (Result<T, StoreError>) -> Void) -> Void) async throws(HTTPProblem) -> T {
        let result = await withCheckedContinuation { continuation in start { continuation.resume(returning: $0) } }
        switch result {
        case .success(let value): return value
        case .failure(let error):
            throw HTTPProblem(error)
        }
    }
}
