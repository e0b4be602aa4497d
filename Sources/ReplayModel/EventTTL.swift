/// How long an event lives from its commit (`ttl=30`, `--ttl 30s`, `Replay-TTL: 30`, and a
/// stream's default `event_ttl`): past it the event is never served, and the retention pass
/// removes it. One type for the wire, the clients and the store, so every door reads and
/// bounds it the same way. Milliseconds, since that is what the store's times are counted in.
public struct EventTTL: Sendable, Hashable {
    public let millis: Int64

    /// The longest (100 years, as a stream's time-to-live): an expiry is counted in
    /// milliseconds in 64 bits.
    public static let maxSeconds: Double = 100 * 365 * 86_400

    /// From seconds (fractions allowed, down to a millisecond); `nil` outside 0.001...100 years.
    public init?(seconds: Double) {
        guard seconds.isFinite, seconds >= 0.001, seconds <= Self.maxSeconds else { return nil }
        millis = Int64((seconds * 1000).rounded(.up))
    }

    /// From the wire's and HTTP's text (`30`, `0.5`).
    public init?(_ text: Substring) {
        guard let seconds = Double(text) else { return nil }
        self.init(seconds: seconds)
    }

    public var seconds: Double { Double(millis) / 1000 }

    /// Its seconds as the wire, HTTP and INFO write them: whole where they are (`30`), else
    /// to the millisecond (`0.5`).
    public var text: String {
        millis % 1000 == 0 ? String(millis / 1000) : String(Double(millis) / 1000)
    }

    /// When an event committed at `millis` expires.
    public func expiry(committedAt millis: Int64) -> Int64 { millis + self.millis }

    /// What the refusals name.
    public static let rangeMessage = "a time-to-live is in seconds, from 0.001 up to 100 years"
}
