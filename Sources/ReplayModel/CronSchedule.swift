import Foundation

/// A cron schedule, as crontab(5) writes one: five fields (minute, hour, day of month,
/// month, day of week), each `*`, a number, a range `a-b`, a step `*/n` or `a-b/n`, or a
/// list of these; month and day names (`JAN`, `MON`); the macros `@hourly`, `@daily`,
/// `@weekly`, `@monthly`, `@yearly`. UTC unless the schedule starts with a zone,
/// `CRON_TZ=Europe/Paris` (as cronie and Kubernetes write it). When both the day of month
/// and the day of week are restricted, a day matching either runs (Vixie cron's rule).
///
/// Written here: no listed package parses cron, and the rules fit in a page. Fields may be
/// separated by `_` as well as spaces, so that a schedule is one word on the socket's
/// `CREATE` line.
public struct CronSchedule: Sendable, Equatable, CustomStringConvertible {
    /// The schedule as given, fields separated by single spaces.
    public let text: String
    public let zone: TimeZone
    private let minutes: Set<Int>
    private let hours: Set<Int>
    private let days: Set<Int>
    private let months: Set<Int>
    /// 0 is Sunday (7, as cron allows, is read as 0).
    private let weekdays: Set<Int>
    private let daysRestricted: Bool
    private let weekdaysRestricted: Bool

    public var description: String { text }

    public struct Invalid: Error, Equatable, Sendable, CustomStringConvertible {
        public let message: String
        public var description: String { message }
        public init(message: String) { self.message = message }
    }

    static let macros = [
        "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0", "@daily": "0 0 * * *",
        "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
    ]
    static let monthNames = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
    static let dayNames = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]

    public init(_ given: String) throws(Invalid) {
        var rest = Substring(given)
        var zoned = false
        for prefix in ["CRON_TZ=", "TZ="] where rest.uppercased().hasPrefix(prefix) {
            rest = rest.dropFirst(prefix.count)
            zoned = true
            break
        }
        var words = rest.split { $0 == " " || $0 == "_" || $0 == "\t" }.map(String.init)
        var zone = TimeZone(identifier: "UTC")!
        if zoned {
            // The fields are the last five words (one for a macro); the zone is what comes
            // before them, its own `_` kept (`America/New_York`).
            let fields = words.last.map { Self.macros[$0.lowercased()] != nil ? 1 : 5 } ?? 5
            let name = words.dropLast(fields).joined(separator: "_")
            guard !name.isEmpty, let found = TimeZone(identifier: name) else { throw Invalid(message: "unknown time zone '\(name.prefix(64))'") }
            zone = found
            words = Array(words.suffix(fields))
        }
        let zoneWord = zoned ? ["CRON_TZ=\(zone.identifier)"] : []
        if words.count == 1, let expanded = Self.macros[words[0].lowercased()] {
            words = expanded.split(separator: " ").map(String.init)
        }
        guard words.count == 5 else {
            throw Invalid(message: "a schedule has five fields (minute hour day-of-month month day-of-week), such as */5 * * * *")
        }
        minutes = try Self.field(words[0], 0...59, "minute")
        hours = try Self.field(words[1], 0...23, "hour")
        days = try Self.field(words[2], 1...31, "day of month")
        months = try Self.field(words[3], 1...12, "month", names: Self.monthNames, firstName: 1)
        weekdays = Set(try Self.field(words[4], 0...7, "day of week", names: Self.dayNames, firstName: 0).map { $0 % 7 })
        daysRestricted = !words[2].hasPrefix("*")
        weekdaysRestricted = !words[4].hasPrefix("*")
        self.zone = zone
        text = (zoneWord + words).joined(separator: " ")
    }

    /// One field's values: a list of `*`, `n`, `a-b`, each with an optional `/step`.
    private static func field(
        _ text: String, _ range: ClosedRange<Int>, _ what: String, names: [String] = [], firstName: Int = 0
    ) throws(Invalid)
        -> Set<Int>
    {
        func value(_ word: Substring) throws(Invalid) -> Int {
            if let number = Int(word), range.contains(number) { return number }
            if let index = names.firstIndex(of: word.uppercased()) { return index + firstName }
            throw Invalid(message: "the \(what) field takes \(range.lowerBound)-\(range.upperBound), not '\(word.prefix(16))'")
        }
        var values = Set<Int>()
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            let parts = item.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
            var step = 1
            if parts.count == 2 {
                guard let given = Int(parts[1]), given > 0 else { throw Invalid(message: "a step in the \(what) field is a positive number") }
                step = given
            }
            let span: ClosedRange<Int>
            if parts[0] == "*" {
                span = range
            } else if let dash = parts[0].firstIndex(of: "-") {
                let (low, high) = (try value(parts[0][..<dash]), try value(parts[0][parts[0].index(after: dash)...]))
                guard low <= high else { throw Invalid(message: "a range in the \(what) field goes up, not '\(item.prefix(16))'") }
                span = low...high
            } else {
                let start = try value(parts[0])
                // `n/step`: from n to the end, as Vixie cron reads it.
                span = parts.count == 2 ? start...range.upperBound : start...start
            }
            values.formUnion(stride(from: span.lowerBound, through: span.upperBound, by: step))
        }
        return values
    }

    /// The first time after `date` (strictly) that the schedule names, to the minute.
    /// `nil` only for a schedule no date matches (the 31st of February), found within
    /// eight years.
    public func next(after date: Date) -> Date? {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        // From the start of the next minute.
        guard var time = calendar.dateInterval(of: .minute, for: date)?.end else { return nil }
        let limit = date.addingTimeInterval(8 * 366 * 86_400)
        while time < limit {
            let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .weekday], from: time)
            guard let month = parts.month, let day = parts.day, let hour = parts.hour, let minute = parts.minute, let weekday = parts.weekday
            else { return nil }
            // A field that does not match skips to the start of its next unit.
            let unit: Calendar.Component
            if !months.contains(month) {
                unit = .month
            } else if !dayMatches(day: day, weekday: weekday - 1) {
                unit = .day
            } else if !hours.contains(hour) {
                unit = .hour
            } else if !minutes.contains(minute) {
                unit = .minute
            } else {
                return time
            }
            guard let end = calendar.dateInterval(of: unit, for: time)?.end else { return nil }
            time = end
        }
        return nil
    }

    /// Whether a tick fell in `(since, now]`: one a daemon that was down has missed.
    public func missed(since: Date, now: Date) -> Bool {
        next(after: since).map { $0 <= now } ?? false
    }

    private func dayMatches(day: Int, weekday: Int) -> Bool {
        switch (daysRestricted, weekdaysRestricted) {
        case (true, true): days.contains(day) || weekdays.contains(weekday)
        case (true, false): days.contains(day)
        case (false, true): weekdays.contains(weekday)
        case (false, false): true
        }
    }
}
