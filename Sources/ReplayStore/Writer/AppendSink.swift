/// Who hears that appends committed, once per batch: a connection's reply path.
///
/// A publishing connection has many appends in each group commit. A completion closure
/// per append would mean a closure, a wake-up and a hop per event; a sink is told once per
/// batch, with every result it is owed in submission order, so the connection hops to its
/// event loop once and writes all its acknowledgements in one buffer.
public protocol AppendSink: AnyObject, Sendable {
    /// Called on the writer's thread after the batch's transaction committed (or failed),
    /// once per batch that held appends of this sink. Must only hand the results on.
    func appended(_ results: [AppendResult])
}

/// The outcome of one append submitted with a sink.
public struct AppendResult: Sendable {
    /// What the submitter passed along, to match the result to its request.
    public let token: UInt64
    /// The sequence number the event was stored with (for an atomic send, its first
    /// event's), or why it was not.
    public let sequence: Result<UInt64, StoreError>
    /// An atomic send's other events' sequence numbers, in order.
    public let more: [UInt64]

    public init(token: UInt64, sequence: Result<UInt64, StoreError>, more: [UInt64] = []) {
        self.token = token
        self.sequence = sequence
        self.more = more
    }
}

/// A batch's results, gathered per sink in submission order.
struct SinkResults {
    private var groups: [(sink: any AppendSink, results: [AppendResult])] = []

    mutating func add(_ sink: any AppendSink, _ result: AppendResult) {
        // Batches come from few connections, usually one after another: try the last first.
        if let last = groups.indices.last, groups[last].sink === sink {
            groups[last].results.append(result)
        } else if let index = groups.firstIndex(where: { $0.sink === sink }) {
            groups[index].results.append(result)
        } else {
            groups.append((sink, [result]))
        }
    }

    /// Tells each sink its results, once.
    func deliver() {
        for group in groups { group.sink.appended(group.results) }
    }
}
