import ReplayStore

/// How long a cursor waits for a store that is away (PostgreSQL restarting), between
/// attempts that double from `first` to `longest`. The position is kept throughout: the
/// store reconnects on the next read, and the reader goes on where it was.
struct CursorRetry: Sendable {
    var first: Duration = .milliseconds(50)
    var longest: Duration = .seconds(2)
    /// How many waits before the error reaches the reader; `nil` waits as long as the
    /// reader's task runs.
    var attempts: Int?
    /// Sleeps between attempts: `Task.sleep` in the daemon, instant in unit tests.
    var sleep: @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }

    /// A subscription outlives any outage: it is an open connection that simply waits.
    static let untilCancelled = CursorRetry(attempts: nil)

    /// An HTTP read answers within seconds: about 3 s of waiting (50 ms doubling, six
    /// times), then 503, which a Durable Streams client retries on its own.
    static let briefly = CursorRetry(attempts: 6)

    /// `body`, again after each wait while the store is away (`unavailable`), as a cursor's
    /// reads are retried; any other error at once.
    func attempts<T>(_ body: () async throws -> T) async throws -> T {
        var attempt = 0
        while true {
            do {
                return try await body()
            } catch let error as StoreError {
                guard case .unavailable = error, let delay = delay(before: attempt) else { throw error }
                try await sleep(delay)
                attempt += 1
            }
        }
    }

    /// The wait before attempt `number` (0-based), or `nil` once the attempts are spent.
    func delay(before number: Int) -> Duration? {
        if let attempts, number >= attempts { return nil }
        var delay = first
        for _ in 0..<number where delay < longest { delay = min(delay * 2, longest) }
        return delay
    }
}
