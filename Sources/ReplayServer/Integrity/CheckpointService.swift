import Crypto
import Foundation
import Logging
import ReplayAuth
import ReplayModel
import ReplayStore
import ReplaySync
import ServiceLifecycle

/// When the daemon signs checkpoints: every `events` events appended across its streams,
/// or every `interval`, whichever comes first (either may be off).
public struct CheckpointSettings: Sendable, Equatable {
    public var events: Int?
    public var interval: Duration?

    public init(events: Int? = nil, interval: Duration? = nil) {
        self.events = events
        self.interval = interval
    }
}

/// `--checkpoint-every N` / `--checkpoint-interval SECONDS`: signed checkpoints of every
/// stream whose chain moved since its last one, appended to `Checkpoint.stream` in one
/// write (one event per stream), signed with the daemon's Ed25519 key (`SigningKeys`, the
/// key the HTTP door publishes as a JWK set).
///
/// It looks every `tick` at the streams' chain heads, in memory. After a start every
/// stream with events is checkpointed once at the first due time: the last checkpoints
/// are not read back. Stops at the group's graceful shutdown.
final class CheckpointService: Service, Sendable {
    private let store: EventStore
    private let settings: CheckpointSettings
    private let logger: Logger
    private let tick: Duration
    private let started = Locked(false)

    init(store: EventStore, settings: CheckpointSettings, logger: Logger, tick: Duration = .milliseconds(200)) {
        self.store = store
        self.settings = settings
        self.logger = logger
        self.tick = min(tick, settings.interval ?? tick)
    }

    func run() async throws {
        try started.withLock { started in
            guard !started else { throw ReplayServerError("the checkpoint service runs once") }
            started = true
        }
        let keys = try await SigningKeys.load(from: store)
        // Kept whole unless its creator said otherwise (created first, by a reader, with
        // the daemon's default capacity).
        do { _ = try await store.create(Checkpoint.stream, config: StreamConfig(capacity: nil)) } catch .streamExists {}
        try? await cancelWhenGracefulShutdown { [store, settings, tick, logger] in
            // What each stream's last checkpoint covered, and when the last were written.
            var signed: [String: UInt64] = [:]
            var last = ContinuousClock.now
            while true {
                try await Task.sleep(for: tick)
                let moved = store.chainHeads.filter { $0.stream != Checkpoint.stream && $0.sequence > signed[$0.stream] ?? 0 }
                guard !moved.isEmpty else { continue }
                let events = moved.reduce(0) { $0 + Int($1.sequence - (signed[$1.stream] ?? 0)) }
                let timeUp = settings.interval.map { ContinuousClock.now - last >= $0 } ?? false
                guard timeUp || settings.events.map({ events >= $0 }) == true else { continue }
                do {
                    let now = Date()
                    let checkpoints = try moved.map { try keys.checkpoint($0, at: now) }
                    let payloads = try checkpoints.map { try JSONEncoder.sorted.encode($0) }
                    _ = try await store.write(StreamWrite(stream: Checkpoint.stream, payloads: payloads))
                    for head in moved { signed[head.stream] = head.sequence }
                    last = ContinuousClock.now
                } catch {
                    logger.warning("could not write checkpoints", metadata: ["error": "\(error)"])
                }
            }
        }
    }
}

extension SigningKeys {
    /// A signed checkpoint of `head`, made at `time`.
    func checkpoint(_ head: ChainHead, at time: Date) throws -> Checkpoint {
        var checkpoint = Checkpoint(stream: head.stream, seq: head.sequence, hash: head.hash.hex, time: Timestamp.format(time), kid: kid)
        checkpoint.signature = Base64URL.encode(try sign(checkpoint.signedMessage))
        return checkpoint
    }
}

extension JSONEncoder {
    /// Keys in order: the same checkpoint is the same bytes.
    static var sorted: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}
