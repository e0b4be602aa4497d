import Dispatch
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
    /// Set by `close`: a read still running as the store closes (a derivation's, during a
    /// drain) must not open a connection that nothing will close (postgres-nio traps on a
    /// connection released unclosed).
    private let isClosed = Locked(false)
    private static let ids = Locked(0)

    init(_ location: PostgresLocation, logger: Logger) {
        self.location = location
        self.logger = logger
    }

    @discardableResult
    func query(_ query: PostgresQuery) throws -> PostgresQueryResult {
        try PinnedConnection(try connected()).query(query)
    }

    /// The open connection, connecting if there is none (or it was lost).
    func connected() throws -> PostgresConnection {
        try connection.withLock { current in
            if isClosed.value { throw StoreError.closed }
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
            isClosed.withLock { $0 = true }
            defer { current = nil }
            return current
        }
        _ = try? open?.close().wait()
    }
}

/// One connection, never replaced: a transaction's statements must all run on the
/// connection that began it (a reconnect in the middle would run the rest outside it).
/// Used by one thread at a time.
final class PinnedConnection: PostgresQuerying {
    let connection: PostgresConnection
    /// Statements sent without waiting, whose answers the next wait looks at.
    private var unanswered: [EventLoopFuture<Void>] = []

    init(_ connection: PostgresConnection) {
        self.connection = connection
    }

    /// The logger postgres-nio is given for each statement. It logs a statement at debug
    /// level at most, and a failed one is thrown to the caller, who logs it; but for each
    /// statement it sets the connection's id in the logger's metadata, which a real
    /// handler copies: with the prepared statement's default name, a tenth of the
    /// writer's samples per batch (`perf record`). The connection itself logs with the
    /// session's logger (`PostgresSession.connected`).
    private static let logger = Logger(label: "replay.postgres.statements") { _ in SwiftLogNoOpLogHandler() }

    /// How long a statement may go unanswered before its connection is given up on (a
    /// server behind a partition answers nothing, and the writer must not wait forever).
    static let answerDeadline: TimeAmount = .seconds(30)

    /// Sends a statement whose answer is not needed before the next one's: the connection
    /// runs its statements in order, so the caller's thread skips a wait (and the event
    /// loop a wake-up of it). A failure is thrown by the next `query`, which comes before
    /// anything is decided on the failed statement's effect: a failed `BEGIN` by the
    /// batch's first read, a failed statement before `COMMIT` by the `COMMIT`, which
    /// PostgreSQL answers as a rollback without an error.
    @discardableResult
    func send(_ query: PostgresQuery) -> EventLoopFuture<PostgresQueryResult> {
        let statement = connection.query(query, logger: Self.logger)
        unanswered.append(statement.map { _ in })
        return statement
    }

    /// Sends a prepared statement (parsed and planned once per connection), as `send`.
    ///
    /// postgres-nio runs prepared statements from async code only. `Task.immediate` runs
    /// the call on this thread up to its first suspension, and postgres-nio hands the
    /// statement to its connection before that: so it is queued here, in order with the
    /// statements sent before and after it, as a `send` is. Its rows are collected by the
    /// task once they arrive, on the connection's event loop (`EventLoopTaskExecutor`).
    @discardableResult
    func send<Statement: PostgresPreparedStatement>(_ statement: Statement) -> EventLoopFuture<[Statement.Row]>
    where Statement.Row: Sendable {
        let promise = connection.eventLoop.makePromise(of: [Statement.Row].self)
        let logger = Self.logger
        Task.immediate(executorPreference: EventLoopTaskExecutor(connection.eventLoop)) { [connection, logger] in
            do {
                var rows: [Statement.Row] = []
                for try await row in try await connection.execute(statement, logger: logger) { rows.append(row) }
                promise.succeed(rows)
            } catch {
                promise.fail(error)
            }
        }
        unanswered.append(promise.futureResult.map { _ in })
        return promise.futureResult
    }

    /// Runs a prepared statement and waits for its rows (and for anything sent before it).
    @discardableResult
    func query<Statement: PostgresPreparedStatement>(_ statement: Statement) throws -> [Statement.Row]
    where Statement.Row: Sendable {
        try answerAll(send(statement))
    }

    /// Waits for the statement's result, or fails as soon as the connection is closed:
    /// a server shutting down was seen to end the connection with a statement's promise
    /// left pending, which `wait()` alone would wait on forever.
    ///
    /// The caller's thread waits in slices of 100 ms and looks at the connection between
    /// them. A repeated task on the event loop did the same, but scheduling and cancelling
    /// it were two more hand-offs to the event loop for every statement, and a batch of the
    /// writer makes several statements.
    @discardableResult
    func query(_ query: PostgresQuery) throws -> PostgresQueryResult {
        try answerAll(connection.query(query, logger: Self.logger))
    }

    /// Waits for the statements sent before `last`, then for `last`'s answer.
    private func answerAll<T: Sendable>(_ last: EventLoopFuture<T>) throws -> T {
        let sent = unanswered
        unanswered = []
        // In the order they ran: the first failure is the cause, what follows it only fails.
        for earlier in sent { _ = try answer(earlier) }
        return try answer(last)
    }

    private func answer<T: Sendable>(_ statement: EventLoopFuture<T>) throws -> T {
        let ready = DispatchSemaphore(value: 0)
        let answer = Locked<Result<T, any Error>?>(nil)
        statement.whenComplete { result in
            answer.withLock { $0 = result }
            ready.signal()
        }
        let started = NIODeadline.now()
        while ready.wait(timeout: .now() + .milliseconds(100)) == .timedOut {
            if connection.isClosed { throw StoreError.unavailable("the connection to PostgreSQL closed") }
            if NIODeadline.now() - started > Self.answerDeadline {
                connection.close().whenComplete { _ in }
                throw StoreError.unavailable("PostgreSQL did not answer within \(Self.answerDeadline.nanoseconds / 1_000_000_000) s")
            }
        }
        return try answer.value!.get()
    }
}
