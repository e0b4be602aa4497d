import Foundation

/// Times, in one place for every layer: ISO-8601 UTC with milliseconds,
/// `2026-11-22T03:17:14.123Z`, as events, INFO and the `events` view show them (their text
/// order is their time order), and the forms people may type (`since=`).
///
/// Formatting and strict parsing are hand-written because they run for every page of
/// events and Foundation's formatters are an order of magnitude slower.
public enum Timestamp {
    public static func format(_ date: Date) -> String {
        format(millis: millis(date))
    }

    /// Milliseconds since 1970 UTC, as the log stores event times.
    public static func millis(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
    }

    public static func date(millis: Int64) -> Date {
        Date(timeIntervalSince1970: TimeInterval(millis) / 1000)
    }

    /// The text of a time stored as milliseconds: digits written in place, into the
    /// string's own storage (its one allocation), no formatter (catch-up formats the time of
    /// every page's commits, the writer that of every commit).
    public static func format(millis: Int64) -> String {
        var seconds = time_t(millis / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(unsafeUninitializedCapacity: 24) { bytes in
            func put(_ value: Int32, _ digits: Int, at offset: Int) {
                var value = value
                for index in stride(from: offset + digits - 1, through: offset, by: -1) {
                    bytes[index] = UInt8(truncatingIfNeeded: 0x30 + value % 10)
                    value /= 10
                }
            }
            put(parts.tm_year + 1900, 4, at: 0)
            bytes[4] = 0x2D
            put(parts.tm_mon + 1, 2, at: 5)
            bytes[7] = 0x2D
            put(parts.tm_mday, 2, at: 8)
            bytes[10] = 0x54
            put(parts.tm_hour, 2, at: 11)
            bytes[13] = 0x3A
            put(parts.tm_min, 2, at: 14)
            bytes[16] = 0x3A
            put(parts.tm_sec, 2, at: 17)
            bytes[19] = 0x2E
            put(Int32(millis % 1000), 3, at: 20)
            bytes[23] = 0x5A
            return 24
        }
    }

    /// A time as people may give it (`since=`): ISO-8601 UTC with or without fractions of
    /// a second, or Unix seconds. Returns Unix seconds.
    public static func parseLenient(_ text: String) -> Double? {
        if let seconds = Double(text), seconds.isFinite { return seconds }
        return (parse(text) ?? parseRFC3339(text))?.timeIntervalSince1970
    }

    /// Any RFC 3339 time (`2026-11-23T12:00:00Z`, with fractions of a second or an offset
    /// such as `+02:00`), as HTTP headers and people give them. Rare, so Foundation's
    /// formatter is fine here; `parse` is the fast path for the form this type writes.
    public static func parseRFC3339(_ text: String) -> Date? {
        let withFraction = ISO8601DateFormatter()
        withFraction.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = withFraction.date(from: text) { return date }
        let plain = ISO8601DateFormatter()
        plain.formatOptions = [.withInternetDateTime]
        return plain.date(from: text)
    }

    /// The exact form this type formats, `2026-11-22T03:17:14.123Z`, or `nil`.
    public static func parse(_ text: String) -> Date? {
        let utf8 = Array(text.utf8)
        guard utf8.count == 24, utf8[4] == 0x2D, utf8[10] == 0x54, utf8[19] == 0x2E, utf8[23] == 0x5A
        else { return nil }
        func number(_ range: Range<Int>) -> Int32? {
            var value: Int32 = 0
            for byte in utf8[range] {
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                value = value * 10 + Int32(byte - 0x30)
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
            let millis = number(20..<23)
        else { return nil }
        var parts = tm()
        parts.tm_year = year - 1900
        parts.tm_mon = month - 1
        parts.tm_mday = day
        parts.tm_hour = hour
        parts.tm_min = minute
        parts.tm_sec = second
        let seconds = timegm(&parts)
        return Date(timeIntervalSince1970: TimeInterval(seconds) + TimeInterval(millis) / 1000)
    }
}
