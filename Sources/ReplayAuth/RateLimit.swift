/// A rate: at most `count` units (requests, or bytes) per `period`, with up to one
/// period's worth taken at once. Written `100/s`, `6000/min`, `1M/s` (k, M and G are
/// powers of 1,000, as network rates are), in flags and in a token's `limits` claim.
public struct RateLimit: Sendable, Equatable, CustomStringConvertible {
    public let count: Int
    public let period: Duration

    public init(count: Int, period: Duration) {
        self.count = count
        self.period = period
    }

    /// The rate `text` writes, or `nil` if it is not one.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        let period: Duration
        switch parts[1] {
        case "s", "sec", "second": period = .seconds(1)
        case "min", "minute": period = .seconds(60)
        case "h", "hour": period = .seconds(3600)
        default: return nil
        }
        var digits = Substring(parts[0])
        var scale = 1
        switch digits.last {
        case "k", "K": scale = 1_000
        case "M": scale = 1_000_000
        case "G": scale = 1_000_000_000
        default: break
        }
        if scale > 1 { digits = digits.dropLast() }
        guard let number = Int(digits), number > 0, number <= Int.max / scale else { return nil }
        self.init(count: number * scale, period: period)
    }

    public var description: String {
        let unit = period == .seconds(1) ? "s" : period == .seconds(60) ? "min" : period == .seconds(3600) ? "h" : "\(period)"
        return "\(count)/\(unit)"
    }
}

/// How much one client may do: its request and byte rates (`nil`: unlimited), and how
/// many streams it may have created (HTTP tokens only).
public struct ClientLimits: Sendable, Equatable {
    public var requests: RateLimit?
    public var bytes: RateLimit?
    public var streams: Int?

    public static let none = ClientLimits()

    /// Whether a request or byte rate is set (the stream cap is the writer's).
    public var limitsRates: Bool { requests != nil || bytes != nil }

    public init(requests: RateLimit? = nil, bytes: RateLimit? = nil, streams: Int? = nil) {
        self.requests = requests
        self.bytes = bytes
        self.streams = streams
    }

    /// These limits, with `defaults` where these set none (a token's own over the daemon's).
    public func over(_ defaults: ClientLimits) -> ClientLimits {
        ClientLimits(requests: requests ?? defaults.requests, bytes: bytes ?? defaults.bytes, streams: streams ?? defaults.streams)
    }
}
