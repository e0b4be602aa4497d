import Logging
import NIOPosix
import ReplayStore

@testable import ReplayServer

/// The appends a door's handlers take (`InlineAppends`), over a real store and a read pool,
/// for tests of those handlers on an embedded channel.
enum StoreAppends {
    static func make(store: EventStore, threads: NIOThreadPool) -> InlineAppends {
        let logger = Logger(label: "test")
        let endpoint = StreamEndpoint(
            store: store, hubs: StreamHubs(store: store, tailEvents: 16, tailBytes: 1 << 16), reads: ReadPool(pool: threads),
            settings: HTTPSettings(host: "127.0.0.1", port: 0), maxPayload: 1024,
            leases: StreamLeases(sources: SourceRegistry(store: store, logger: logger), derivations: DerivationRegistry(store: store, logger: logger)),
            programBudget: .init(), logger: logger)
        return InlineAppends(endpoint: endpoint, settings: endpoint.settings, metrics: nil, limiter: ClientRateLimiter(logger: logger))
    }
}
