import Foundation
import NIOPosix
import ReplayStore
import ReplaySync
import ServiceLifecycle

/// The store as a service: opened when the daemon is assembled, closed at the group's
/// graceful shutdown (or its cancellation). It is the first service, so it stops last,
/// after everything that writes to it.
final class StoreService: Service, Sendable {
    private enum State {
        case open
        case running
        case closed
    }

    let store: EventStore
    private let state = Locked(State.open)

    init(configuration: ServerConfiguration) throws {
        if !EventStore.isPostgres(configuration.databasePath) { try Self.makeParentFolder(of: configuration.databasePath) }
        store = try EventStore(
            location: configuration.databasePath,
            options: .init(
                durability: configuration.durability,
                autoCreate: configuration.autoCreate ? StreamConfig(capacity: configuration.defaultCapacity) : nil))
    }

    func run() async throws {
        try state.withLock { state in
            guard case .open = state else { throw ReplayServerError("the store service runs once") }
            state = .running
        }
        // Returns at the graceful shutdown, throws at a cancellation: close either way.
        try? await gracefulShutdown()
        await close()
    }

    /// Commits what is queued, checkpoints and closes, once. Off the cooperative pool: it
    /// waits on the disk.
    func close() async {
        let first = state.withLock { state in
            defer { state = .closed }
            return state != .closed
        }
        guard first else { return }
        let store = self.store
        _ = try? await NIOThreadPool.singleton.runIfActive { store.close() }
    }

    private static func makeParentFolder(of path: String) throws {
        let folder = (path as NSString).deletingLastPathComponent
        guard !folder.isEmpty else { return }
        try FileManager.default.createDirectory(
            atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }
}
