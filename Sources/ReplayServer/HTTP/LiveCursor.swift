import Foundation

/// `Stream-Cursor` (Durable Streams PROTOCOL.md §10.1): the number of 20-second intervals since
/// 2024-10-09T00:00:00Z, never at or below the cursor the client echoed, so that a CDN
/// collapsing live requests by URL never serves the same cached empty answer forever.
enum LiveCursor {
    static let epoch = Date(timeIntervalSince1970: 1_728_432_000)
    static let interval: TimeInterval = 20

    static func next(after client: UInt64?, now: Date = Date()) -> UInt64 {
        let current = UInt64(max(0, now.timeIntervalSince(epoch) / interval))
        guard let client, client >= current else { return current }
        // Jitter of 1 to 3,600 seconds, in whole intervals (at least one). The client's
        // cursor is its own input: saturate rather than overflow.
        let (next, overflow) = client.addingReportingOverflow(max(1, UInt64.random(in: 1...3600) / UInt64(interval)))
        return overflow ? .max : next
    }
}
