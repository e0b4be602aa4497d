import Dispatch
import Foundation
import ReplayCore

/// A stream of the store as the buffer of a core `ReplaySubject`: the subject's history
/// survives restarts, its capacity is the stream's, and live subscribers only ever see
/// committed events.
///
/// ```swift
/// let buffer = try StoreReplayBuffer<String>(store: store, stream: "greetings", config: .init(capacity: 10))
/// let subject = ReplaySubject(buffer: buffer)
/// subject.send("hello")          // committed to SQLite, then delivered
/// // …after a restart, a new subject over the same stream replays "hello".
/// ```
public final class StoreReplayBuffer<Value: Sendable>: ReplayBuffer {
    public typealias Encode = @Sendable (Value) -> Data
    public typealias Decode = @Sendable (Data) throws -> Value

    public let store: EventStore
    public let stream: String
    private let encode: Encode
    private let decode: Decode
    // Completions leave the writer's thread at once, in commit order: subscribers' code
    // must never hold up the next transaction.
    private let callbacks = DispatchQueue(label: "replay.store.buffer-callbacks")

    /// Uses `stream`, creating it with `config` if it does not exist.
    public init(
        store: EventStore, stream: String, config: StreamConfig,
        encode: @escaping Encode, decode: @escaping Decode
    ) async throws(StoreError) {
        self.store = store
        self.stream = stream
        self.encode = encode
        self.decode = decode
        if store.info(stream) == nil { _ = try await store.create(stream, config: config) }
    }

    public var lastCommittedSequence: UInt64 {
        guard let info = store.info(stream) else { return 0 }
        return info.terminalSequence ?? info.lastSequence
    }

    public func append(
        _ event: Event<Value>,
        completion: @escaping @Sendable (Result<ReplayEntry<Value>, any Error>) -> Void
    ) {
        let callbacks = self.callbacks
        switch event {
        case .value(let value):
            store.append(encode(value), to: stream) { result in
                callbacks.async {
                    completion(Self.adapt(result.map { ReplayEntry(sequence: $0.sequence, event: event) }))
                }
            }
        case .completed, .failed:
            let terminal: Terminal =
                if case .failed(let error) = event {
                    .failed(message: "\(error)")
                } else {
                    .completed
                }
            store.terminate(stream, terminal) { result in
                callbacks.async {
                    completion(Self.adapt(result.map { ReplayEntry(sequence: $0.terminalSequence!, event: event) }))
                }
            }
        }
    }

    public func read(from: UInt64, through: UInt64, limit: Int) throws -> [ReplayEntry<Value>] {
        guard let info = store.info(stream) else { return [] }
        var entries = try store.read(stream, from: from, through: through, limit: limit).map { stored in
            ReplayEntry(sequence: stored.sequence, event: .value(try decode(stored.payload)))
        }
        if let terminal = info.terminal, let sequence = info.terminalSequence,
            entries.count < limit, from <= sequence, sequence <= through
        {
            let event: Event<Value> =
                switch terminal {
                case .completed: .completed
                case .failed(let message): .failed(StreamFailure(message: message))
                }
            entries.append(ReplayEntry(sequence: sequence, event: event))
        }
        return entries
    }

    private static func adapt(_ result: Result<ReplayEntry<Value>, StoreError>) -> Result<ReplayEntry<Value>, any Error> {
        result.mapError { error -> any Error in
            if case .terminated = error { return ReplayBufferError.terminated }
            return error
        }
    }
}

extension StoreReplayBuffer where Value == String {
    /// A buffer of UTF-8 text events.
    public convenience init(store: EventStore, stream: String, config: StreamConfig) async throws(StoreError) {
        try await self.init(
            store: store, stream: stream, config: config,
            encode: { Data($0.utf8) },
            decode: { String(decoding: $0, as: UTF8.self) })
    }
}

/// A stored failure, replayed: the message is all that survives a restart.
public struct StreamFailure: Error, Equatable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
