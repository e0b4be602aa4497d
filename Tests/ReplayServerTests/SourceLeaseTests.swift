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

    /// At the daemon's start a client may be served before the sources' service follows
    /// the commits: its lease comes first on the queue, ahead of the scan of the existing
    /// streams, and found no supervisor; the source never connected. Here the service runs
    /// only after the lease, and adopts the stream the lease already adopted once, not twice.
    @Test(arguments: [StreamSource.ConnectMode.lazy, .refcount])
    func aLeaseTakenBeforeTheServiceRunsConnectsItsSource(connect: StreamSource.ConnectMode) async throws {
        try await withTemporaryDirectory { directory in
            let store = try EventStore(path: directory + "/replay.sqlite")
            defer { store.close() }
            let registry = SourceRegistry(store: store, logger: Logger(label: "test"))
            let source = StreamSource(command: "echo ready; exec sleep 600", connect: connect)
            _ = try await store.create("early", config: StreamConfig(capacity: nil, source: source))
            let lease = registry.lease("early")
            try await eventually("the source to start for the lease") { registry.describe("early")?.starts == 1 }
            let service = Task { try await registry.run() }
            try await eventually("its first line stored") { store.info("early")?.lastSequence == 1 }
            // An eager source created now starts after the service's scan of the streams,
            // by the scan or by the commit the service follows once it has scanned.
            let probe = StreamSource(command: "exec sleep 600", connect: .eager)
            _ = try await store.create("probe", config: StreamConfig(capacity: nil, source: probe))
            try await eventually("the service to have scanned the streams") { registry.describe("probe")?.starts == 1 }
            #expect(registry.describe("early")?.starts == 1, "adopted once: a second supervisor would describe no start")
            lease.dispose()
            service.cancel()
            try? await service.value
        }
    }
}
