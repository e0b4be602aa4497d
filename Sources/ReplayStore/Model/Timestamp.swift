import Foundation

/// ISO-8601 UTC timestamps with milliseconds, `2026-11-22T03:17:14.123Z`: readable in the
/// sqlite3 shell, and their text order is their time order. Hand-written because this runs
/// once per stored event and Foundation's formatters are an order of magnitude slower.
enum Timestamp {
    static func format(_ date: Date) -> String {
        format(millis: millis(date))
    }

    /// Milliseconds since 1970 UTC, as the log stores event times.
    static func millis(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
    }

    static func date(millis: Int64) -> Date {
        Date(timeIntervalSince1970: TimeInterval(millis) / 1000)
    }

    /// The text of a time stored as milliseconds: digits written in place, no formatter
    /// (catch-up formats the time of every page's commits).
    static func format(millis: Int64) -> String {
        var seconds = time_t(millis / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let text = [UInt8](unsafeUninitializedCapacity: 24) { bytes, count in
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
            count = 24
        }
        return String(decoding: text, as: UTF8.self)
    }

    static func parse(_ text: String) -> Date? {
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
