import Foundation
import ReplayModel

/// A derived stream's derivation as stored (the `derivations` row): what it computes, how
/// far it has read each input, its operators' state, and how it fares. The store keeps the
/// state as the derivation's own JSON without reading it: only the daemon's runner does.
public struct Derivation: Sendable, Equatable {
    public enum Status: String, Sendable, Codable {
        /// Computing, or ready to when its connect mode says so.
        case running
        /// Stopped by an error under `on_error=stop` (`error` says which), until redefined.
        case stopped
    }

    /// The derived stream.
    public let stream: String
    public var spec: DerivationSpec
    /// The last sequence number read of each input stream (none: nothing read yet).
    public var positions: [String: UInt64]
    public var state: String?
    public var status: Status
    public var error: String?
    /// Input events computed, and those whose computation failed.
    public var processed: UInt64
    public var errors: UInt64
    public var createdAt: Int64
    public var updatedAt: Int64

    public init(
        stream: String, spec: DerivationSpec, positions: [String: UInt64] = [:], state: String? = nil, status: Status = .running,
        error: String? = nil, processed: UInt64 = 0, errors: UInt64 = 0, createdAt: Int64, updatedAt: Int64
    ) {
        self.stream = stream
        self.spec = spec
        self.positions = positions
        self.state = state
        self.status = status
        self.error = error
        self.processed = processed
        self.errors = errors
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// The positions as their column's JSON.
    var positionsJSON: String {
        JSONText.of(positions)
    }

    /// A row's columns, as both stores read them.
    init(
        stream: String, definition: String, positions: String, state: String?, status: String, error: String?, processed: Int64, errors: Int64,
        createdAt: Int64, updatedAt: Int64
    ) throws {
        self.stream = stream
        do throws(DerivationSpec.Invalid) {
            spec = try DerivationSpec(json: definition)
        } catch {
            throw StoreError.invalidConfig("the derivation of '\(stream)' is damaged: \(error.message)")
        }
        self.positions = (try? JSONDecoder().decode([String: UInt64].self, from: Data(positions.utf8))) ?? [:]
        self.state = state
        self.status = Status(rawValue: status) ?? .stopped
        self.error = error
        self.processed = UInt64(max(0, processed))
        self.errors = UInt64(max(0, errors))
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// A derivation created, or redefined: the derived stream is created with `config` if it
/// does not exist.
public struct DerivationDefinition: Sendable {
    public let stream: String
    public let spec: DerivationSpec
    public let config: StreamConfig
    /// Recompute from the retained inputs when the definition differs from the stored one
    /// (or the stored one stopped on an error): the derived stream's events so far are
    /// deleted (its sequence numbers go on, never reused) and the state starts again.
    /// Without it, a definition that differs from the stored one is refused.
    public let rebuild: Bool

    public init(stream: String, spec: DerivationSpec, config: StreamConfig, rebuild: Bool = false) {
        self.stream = stream
        self.spec = spec
        self.config = config
        self.rebuild = rebuild
    }
}

/// A derivation's step, handed to the writer as one request: its outputs, its new state
/// and its new input positions, committed together or not at all. `expected` are the
/// positions it read from: if the stored ones differ (another runner moved it, or it was
/// redefined), the step is refused and nothing is written.
public struct DerivationStep: Sendable {
    public let stream: String
    public let expected: [String: UInt64]
    public var positions: [String: UInt64]
    public var state: String?
    public var outputs: [DerivedOutput] = []
    /// Events for `on_error=dead-letter`, appended to `deadLetterStream` (created with the
    /// store's settings for new streams if it does not exist).
    public var deadLetters: [Data] = []
    public var deadLetterStream: String?
    public var processed: UInt64 = 0
    public var errors: UInt64 = 0
    /// The last error met (the reason, if `stop`).
    public var error: String?
    public var stop = false
    /// Ends the derived stream (take, takeUntil, an input that ended).
    public var terminal: Terminal?

    public init(stream: String, expected: [String: UInt64], positions: [String: UInt64], state: String?) {
        self.stream = stream
        self.expected = expected
        self.positions = positions
        self.state = state
    }
}
