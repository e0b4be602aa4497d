import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import ReplaySync

/// Something statements run on, waiting for each result.
protocol PostgresQuerying {
    @discardableResult
    func query(_ query: PostgresQuery) throws -> PostgresQueryResult
}

/// One PostgreSQL connection for threads that may block (the writer's, the readers'): each
/// query waits for its result, and a lost connection is opened again on the next use.
/// Statements from several threads queue on the connection (postgres-nio runs them in order).
///
/// Written here rather than taken from postgres-nio's `PostgresClient` because that pool is
/// async-only, while the writer's rules (`WriterRules`, shared with SQLite) run
/// synchronously on the writer's own thread and reads run on threads that wait by design,
/// never on an event loop or the cooperative pool.
final class PostgresSession: PostgresQuerying, Sendable {
    private let location: PostgresLocation
    let logger: Logger
    /// Held while connecting, so that two threads never open two connections for one session.
    private let connection = Locked<PostgresConnection?>(nil)
    private static let ids = Locked(0)

    init(_ location: PostgresLocation, logger: Logger) {
        self.location = location
        self.logger = logger
    }

    @discardableResult
    func query(_ query: PostgresQuery) throws -> PostgresQueryResult {
        try PinnedConnection(try connected(), logger: logger).query(query)
    }

    /// The open connection, connecting if there is none (or it was lost).
    func connected() throws -> PostgresConnection {
        try connection.withLock { current in
            if let open = current, !open.isClosed { return open }
            if let lost = current { _ = try? lost.close().wait() }
            current = nil
            let id = Self.ids.withLock { id in
                id += 1
                return id
            }
            let opened = try PostgresConnection.connect(
                on: MultiThreadedEventLoopGroup.singleton.next(), configuration: location.configuration, id: id, logger: logger
            ).wait()
            current = opened
            return opened
        }
    }

    /// The connection as it is now, if any (not reconnecting).
    var current: PostgresConnection? { connection.value }

    func close() {
        let open = connection.withLock { current in
            defer { current = nil }
            return current
        }
        _ = try? open?.close().wait()
    }
}

/// One connection, never replaced: a transaction's statements must all run on the
/// connection that began it (a reconnect in the middle would run the rest outside it).
struct PinnedConnection: PostgresQuerying {
    let connection: PostgresConnection
    let logger: Logger

    init(_ connection: PostgresConnection, logger: Logger) {
        self.connection = connection
        self.logger = logger
    }

    /// How long a statement may go unanswered before its connection is given up on (a
    /// server behind a partition answers nothing, and the writer must not wait forever).
    static let answerDeadline: TimeAmount = .seconds(30)

    /// Waits for the statement's result, or fails as soon as the connection is closed:
    /// a server shutting down was seen to end the connection with a statement's promise
    /// left pending, which `wait()` alone would wait on forever.
    @discardableResult
    func query(_ query: PostgresQuery) throws -> PostgresQueryResult {
        let connection = self.connection
        let eventLoop = connection.eventLoop
        let promise = eventLoop.makePromise(of: PostgresQueryResult.self)
        let settled = Locked(false)
        @Sendable func settle(_ result: Result<PostgresQueryResult, any Error>) {
            guard
                settled.withLock({ settled in
                    defer { settled = true }; return !settled
                })
            else { return }
            promise.completeWith(result)
        }
        connection.query(query, logger: logger).whenComplete(settle)
        let started = NIODeadline.now()
        let watch = eventLoop.scheduleRepeatedTask(initialDelay: .milliseconds(100), delay: .milliseconds(100)) { _ in
            if connection.isClosed {
                settle(.failure(StoreError.unavailable("the connection to PostgreSQL closed")))
            } else if NIODeadline.now() - started > Self.answerDeadline {
                settle(.failure(StoreError.unavailable("PostgreSQL did not answer within \(Self.answerDeadline.nanoseconds / 1_000_000_000) s")))
                connection.close().whenComplete { _ in }
            }
        }
        defer { watch.cancel() }
        return try promise.futureResult.wait()
    }
}
