import Dispatch
import Foundation
import Logging
import ReplayCore
import ReplayStore
import ReplayTesting
import Testing

@testable import ReplayServer

/// The sources' registry over a real store and real processes, with its queue held back by
/// the test: what a busy machine does to it by chance.
@Suite("Source leases", .timeLimit(.minutes(2)))
struct SourceLeaseTests {
    /// A subscriber that arrives while the creation of its stream still waits on the
    /// sources' queue (the commit hands it there before the creator is answered) connects
    /// the lazy or refcount source once the queue gets to it. Its lease was looked up
    /// straight away before: no supervisor yet, and the source never started.
    @Test(arguments: [StreamSource.ConnectMode.lazy, .refcount])
    func aLeaseTakenBeforeTheStreamIsAdoptedConnectsItsSource(connect: StreamSource.ConnectMode) async throws {
        try await withTemporaryDirectory { directory in
            let store = try EventStore(path: directory + "/replay.sqlite")
            defer { store.close() }
            let control = DispatchQueue(label: "test.sources")
            let registry = SourceRegistry(store: store, logger: Logger(label: "test"), control: control)
            let service = Task { try await registry.run() }
            control.suspend()
            let source = StreamSource(command: "echo ready; exec sleep 600", connect: connect)
            _ = try await store.create("late", config: StreamConfig(capacity: nil, source: source))
            let lease = registry.lease("late")
            #expect(registry.describe("late")?.state == "not connected", "not adopted while the queue is held, and INFO says so")
            control.resume()
            try await eventually("the source to start for the lease") { registry.describe("late")?.starts == 1 }
            try await eventually("its first line stored") { store.info("late")?.lastSequence == 1 }
            lease.dispose()
            service.cancel()
            try? await service.value
        }
    }
}
