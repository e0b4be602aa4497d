import Foundation

/// When a scheduled event falls due: after a delay from when the daemon accepted it
/// (`delay=30`, `--delay 30s`, `Replay-Delay: 30`), or at a time (`at=2026-12-01T09:00:00Z`,
/// `--at`, `Replay-At`). One type for the wire, the clients and the store, so that every
/// door reads and bounds a time the same way.
public enum DueTime: Sendable, Equatable {
    /// Seconds after the daemon accepts the event (fractions allowed).
    case after(seconds: Double)
    /// Milliseconds since 1970, UTC. A time already past falls due at once.
    case at(millis: Int64)

    /// The longest delay, and the furthest time ahead, an event may be scheduled for: a
    /// year. Beyond it a time is far more likely a mistake (seconds taken for
    /// milliseconds) than a plan, and the refusal says so.
    public static let maxSeconds: Double = 366 * 86_400

    /// A delay in seconds as the wire and HTTP give it (`30`, `0.5`), or `nil`.
    public static func delay(_ text: String) -> DueTime? {
        guard let seconds = Double(text), seconds.isFinite, seconds >= 0, seconds <= maxSeconds else { return nil }
        return .after(seconds: seconds)
    }

    /// A time as RFC 3339 (`2026-12-01T09:00:00Z`, fractions and offsets allowed), or `nil`.
    public static func time(_ text: String) -> DueTime? {
        guard let date = Timestamp.parse(text) ?? Timestamp.parseRFC3339(text) else { return nil }
        return .at(millis: Timestamp.millis(date))
    }

    /// The due time in ms since 1970, as of `now` (ms); `nil` when it is further ahead than
    /// `maxSeconds`.
    public func millis(now: Int64) -> Int64? {
        switch self {
        case .after(let seconds):
            return now + Int64((seconds * 1000).rounded(.up))
        case .at(let millis):
            return millis - now > Int64(Self.maxSeconds * 1000) ? nil : millis
        }
    }

    /// What the refusals and the usage lines name.
    public static let format = "delay=<seconds, up to a year> or at=<RFC 3339 time, within a year>"
}
