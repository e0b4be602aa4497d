import Foundation
import ReplayModel
import Testing

/// Cron schedules on fixed dates: no clock is read.
@Suite("Cron schedules")
struct CronScheduleTests {
    static func time(_ text: String) -> Date { Timestamp.parseRFC3339(text)! }

    static func next(_ schedule: String, after text: String) throws -> String? {
        try CronSchedule(schedule).next(after: time(text)).map { Timestamp.format($0) }
    }

    @Test func theNextTickOfEachKindOfField() throws {
        #expect(try Self.next("*/5 * * * *", after: "2026-12-01T10:03:20Z") == "2026-12-01T10:05:00.000Z")
        #expect(try Self.next("*/5 * * * *", after: "2026-12-01T10:05:00Z") == "2026-12-01T10:10:00.000Z", "strictly after")
        #expect(try Self.next("* * * * *", after: "2026-12-31T23:59:30Z") == "2027-01-01T00:00:00.000Z")
        #expect(try Self.next("0 9 * * MON-FRI", after: "2026-12-05T12:00:00Z") == "2026-12-07T09:00:00.000Z", "Saturday to Monday")
        #expect(try Self.next("30 2 1 JAN,jul *", after: "2026-02-01T00:00:00Z") == "2026-07-01T02:30:00.000Z")
        #expect(try Self.next("0 0 29 2 *", after: "2026-03-01T00:00:00Z") == "2028-02-29T00:00:00.000Z", "the next leap day")
        #expect(try Self.next("15-45/15 8 * * *", after: "2026-12-01T08:20:00Z") == "2026-12-01T08:30:00.000Z")
        #expect(try Self.next("5/20 * * * *", after: "2026-12-01T08:26:00Z") == "2026-12-01T08:45:00.000Z", "n/step runs to the end")
        #expect(try Self.next("@hourly", after: "2026-12-01T08:26:00Z") == "2026-12-01T09:00:00.000Z")
        #expect(try Self.next("0 0 * * 7", after: "2026-12-01T00:00:00Z") == "2026-12-06T00:00:00.000Z", "7 is Sunday too")
        #expect(try CronSchedule("0 0 31 2 *").next(after: Self.time("2026-01-01T00:00:00Z")) == nil, "no 31st of February")
    }

    /// Both day fields restricted: either one runs (Vixie cron's rule); one of them `*`:
    /// only the other counts.
    @Test func aDayOfMonthOrADayOfWeek() throws {
        // 2026-12-02 is a Wednesday; the 15th is a Tuesday.
        #expect(try Self.next("0 0 15 * MON", after: "2026-12-02T00:00:00Z") == "2026-12-07T00:00:00.000Z", "Monday the 7th comes first")
        #expect(try Self.next("0 0 15 * *", after: "2026-12-02T00:00:00Z") == "2026-12-15T00:00:00.000Z")
        #expect(try Self.next("0 0 * * MON", after: "2026-12-02T00:00:00Z") == "2026-12-07T00:00:00.000Z")
    }

    @Test func aZoneMovesTheTicksAndKeepsToItsClocks() throws {
        let paris = "CRON_TZ=Europe/Paris 0 9 * * *"
        #expect(try Self.next(paris, after: "2026-12-01T00:00:00Z") == "2026-12-01T08:00:00.000Z", "winter: UTC+1")
        #expect(try Self.next(paris, after: "2026-07-01T00:00:00Z") == "2026-07-01T07:00:00.000Z", "summer: UTC+2")
        #expect(try CronSchedule(paris).text == paris)
        #expect(try CronSchedule("TZ=Asia/Tokyo_0_0_*_*_*").text == "CRON_TZ=Asia/Tokyo 0 0 * * *", "underscores for the socket's one word")
        #expect(try CronSchedule("CRON_TZ=America/New_York_@daily").text == "CRON_TZ=America/New_York 0 0 * * *", "a zone's own underscore")
        #expect(try Self.next("CRON_TZ=America/New_York 0 9 * * *", after: "2026-12-01T00:00:00Z") == "2026-12-01T14:00:00.000Z")
    }

    @Test func aMissedTickIsOneThatFellWhileAway() throws {
        let every5 = try CronSchedule("*/5 * * * *")
        #expect(every5.missed(since: Self.time("2026-12-01T10:01:00Z"), now: Self.time("2026-12-01T10:04:59Z")) == false)
        #expect(every5.missed(since: Self.time("2026-12-01T10:01:00Z"), now: Self.time("2026-12-01T10:05:00Z")))
        #expect(every5.missed(since: Self.time("2026-12-01T10:01:00Z"), now: Self.time("2026-12-09T10:05:00Z")), "many: still one")
    }

    @Test func whatIsRefusedSaysWhy() {
        for (text, message) in [
            ("* * * *", "a schedule has five fields (minute hour day-of-month month day-of-week), such as */5 * * * *"),
            ("60 * * * *", "the minute field takes 0-59, not '60'"),
            ("* * * FOO *", "the month field takes 1-12, not 'FOO'"),
            ("*/0 * * * *", "a step in the minute field is a positive number"),
            ("5-1 * * * *", "a range in the minute field goes up, not '5-1'"),
            ("CRON_TZ=Mars/Olympus * * * * *", "unknown time zone 'Mars/Olympus'"),
        ] {
            #expect(throws: CronSchedule.Invalid(message: message)) { try CronSchedule(text) }
        }
    }
}
