import Foundation
import ReplayModel

/// What a derivation remembers between input events, as it is stored (the `state` column
/// of its `derivations` row, JSON that `sqlite3` shows): committed with its outputs and
/// its input positions in one transaction, so a crash never separates them.
public struct DerivationState: Codable, Equatable, Sendable {
    /// scan's accumulator, as JSON; `nil` before the first event (the spec's `scan` then).
    public var accumulator: String?
    /// The open window's start (ms since 1970, commit time) and how many events it has.
    public var windowStart: Int64?
    public var windowEvents: Int = 0
    /// Outputs counted by skip, and outputs emitted (take).
    public var skipped: UInt64 = 0
    public var emitted: UInt64 = 0
    /// The last output emitted, for distinctUntilChanged.
    public var last: String?
    /// combineLatest's latest event per input, as a JSON object.
    public var latest: String?
    /// Whether the derived stream has completed (take, takeUntil, an input's end).
    public var completed = false

    enum CodingKeys: String, CodingKey {
        case accumulator, skipped, emitted, last, latest, completed
        case windowStart = "window_start"
        case windowEvents = "window_events"
    }

    public init() {}

    public var json: String {
        JSONText.of(self)
    }

    /// The stored state (`nil`: a fresh start). An unreadable one is an error, never a
    /// silent fresh start that would emit every output again.
    public init(json: String?) throws(JQProgram.Failure) {
        guard let json else {
            self.init()
            return
        }
        guard let state = try? JSONDecoder().decode(DerivationState.self, from: Data(json.utf8)) else {
            throw JQProgram.Failure("the derivation's stored state is damaged: \(json.prefix(80))")
        }
        self = state
    }
}
