import Foundation
import ReplaySync

/// The `Date` header's value (RFC 9110 §5.6.7, `Sun, 06 Nov 1994 08:49:37 GMT`), formatted
/// once a second. Hummingbird keeps one for the answers it writes, but not in its public
/// API; the POSTs answered on their event loop (`InlineAppendHandler`) need the same.
enum HTTPDate {
    private static let cache = Locked<(second: Int, text: String)>((-1, ""))

    static var now: String {
        let second = time(nil)
        return cache.withLock { cached in
            if cached.second != second { cached = (second, format(second)) }
            return cached.text
        }
    }

    static func format(_ seconds: Int) -> String {
        var clock = time_t(seconds)
        var parts = tm()
        gmtime_r(&clock, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}
