import Foundation
import NIOCore
import ReplayModel
import ReplayProtocol

/// A publisher whose retries never store an event twice: each event carries the
/// producer's stamp (`id`, `epoch`, `pseq`), and the daemon answers a stamp it already
/// committed with the sequence number it got. When the connection drops (the daemon
/// restarted, or was killed between its commit and its acknowledgement) it reconnects
/// with exponential backoff and sends the same stamps again. Sibling to
/// `ResumingSubscription`.
///
/// ```swift
/// var producer = IdempotentProducer(stream: "payments", id: "billing-1", epoch: 3)
/// let seqs = try await producer.publish([Data("a".utf8), Data("b".utf8)])   // [41, 42]
/// ```
///
/// Give each running instance a higher `epoch` than the last (a restart count, a
/// timestamp): the daemon then refuses an older instance still running (`stale_epoch`).
/// Used from one task: a value, mutated by each publish.
public struct IdempotentProducer: Sendable {
    public let socketPath: String
    public let stream: String
    public let id: String
    public let epoch: UInt64
    /// The pseq the next event gets.
    public private(set) var nextPseq: UInt64
    public let initialBackoff: Double
    public let maxBackoff: Double
    /// Called with each error that caused a reconnection.
    public let onReconnect: (@Sendable (any Error) -> Void)?
    private var client: ReplayClient?

    public init(
        socketPath: String = ReplayClient.defaultSocketPath, stream: String, id: String, epoch: UInt64 = 0,
        startingAt pseq: UInt64 = 0, initialBackoff: Double = 0.05, maxBackoff: Double = 5,
        onReconnect: (@Sendable (any Error) -> Void)? = nil
    ) {
        self.socketPath = socketPath
        self.stream = stream
        self.id = id
        self.epoch = epoch
        self.nextPseq = pseq
        self.initialBackoff = initialBackoff
        self.maxBackoff = maxBackoff
        self.onReconnect = onReconnect
    }

    /// Publishes `payloads` (pipelined, pseqs in order) and returns their sequence numbers,
    /// retrying through disconnections until each is answered. Throws the daemon's refusal
    /// (`stale_epoch`, `pseq_gap`, `terminated`…); the events before it are stored, and
    /// `nextPseq` follows the last stored one.
    public mutating func publish(_ payloads: [Data]) async throws -> [UInt64] {
        let stamps = payloads.indices.map {
            AppendConditions(producer: ProducerStamp(id: id, epoch: epoch, sequence: nextPseq + UInt64($0)))
        }
        var backoff = initialBackoff
        while true {
            try Task.checkCancellation()
            do {
                let client = try await connected()
                let results = try await client.startPublishing(stream, contentsOf: payloads, checks: stamps).results
                var sequences: [UInt64] = []
                for result in results {
                    switch result {
                    case .success(let sequence):
                        sequences.append(sequence)
                        nextPseq += 1
                    case .failure(let error):
                        throw error
                    }
                }
                return sequences
            } catch let error as ReplayClientError {
                switch error {
                case .disconnected, .daemonNotRunning: break
                default: throw error
                }
                onReconnect?(error)
                await client?.close()
                client = nil
                try await Task.sleep(for: .seconds(backoff))
                backoff = Swift.min(maxBackoff, backoff * 2)
            }
        }
    }

    public mutating func publish(_ payload: Data) async throws -> UInt64 {
        try await publish([payload])[0]
    }

    /// Closes the connection (a later publish opens another).
    public mutating func close() async {
        await client?.close()
        client = nil
    }

    private mutating func connected() async throws -> ReplayClient {
        if let client { return client }
        let made = try await ReplayClient.connect(to: socketPath)
        client = made
        return made
    }
}

extension AtomicEvent {
    /// An event of an atomic send (`ReplayClient.publishAtomically`).
    public init(stream: String, _ payload: Data, expect: UInt64? = nil) {
        self.init(stream: stream, payload: ByteBuffer(bytes: payload), expect: expect)
    }

    public init(stream: String, _ text: String, expect: UInt64? = nil) {
        self.init(stream: stream, Data(text.utf8), expect: expect)
    }
}
