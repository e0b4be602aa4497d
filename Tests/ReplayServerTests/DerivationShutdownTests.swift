import Foundation
import Logging
import ReplayDerive
import ReplayProtocol
import ReplayStore
import ReplayTesting
import ServiceLifecycle
import Testing

@testable import ReplayServer

/// The derivations service at the daemon's graceful shutdown: the store service stops
/// after it and closes the store, so it returns only once every runner's thread (with its
/// page read ahead) is done with the store. A runner still reading a closed SQLite file
/// reaches it through a connection already freed.
@Suite("Derivations at shutdown", .timeLimit(.minutes(1)))
struct DerivationShutdownTests {
    @Test func theServiceReturnsOnlyOnceItsRunnersHaveEnded() async throws {
        try await withTemporaryDirectory { directory in
            let store = try EventStore(path: directory + "/replay.sqlite", options: .init(autoCreate: .unlimited))
            defer { store.close() }
            for n in 1...4 { _ = try await store.append(Data(#"{"n":\#(n)}"#.utf8), to: "in") }
            let logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
            // Every event runs until its time budget cuts it off: the runner's step is still
            // computing when the shutdown comes.
            let registry = DerivationRegistry(store: store, budget: .init(timeLimit: .milliseconds(100)), logger: logger)
            let group = ServiceGroup(configuration: .init(services: [.init(service: registry)], logger: logger))
            try await withThrowingTaskGroup(of: Void.self) { services in
                services.addTask { try await group.run() }
                let definition = #"{"inputs":["in"],"program":"last(range(0; infinite))","on_error":"skip"}"#
                _ = try await withCheckedThrowingContinuation { (defined: CheckedContinuation<Derivation, any Error>) in
                    registry.define("out", definition: definition, options: DeriveOptions(), defaultCapacity: nil) { defined.resume(with: $0) }
                }
                #expect(!registry.hasEnded)
                await group.triggerGracefulShutdown()
                try await services.waitForAll()
            }
            #expect(registry.hasEnded)
        }
    }
}
