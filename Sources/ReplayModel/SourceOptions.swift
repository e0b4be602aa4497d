import Foundation

/// How a source's output is cut into events, whether it is restarted, and how long it is
/// given to stop. One type from the command line to the database: CREATE's `key=value`
/// words, replayctl's flags and `--config` declarations all become this, the store keeps
/// it as JSON (the same keys), and the daemon runs by it. A bad value is an error wherever
/// it is met, never a silent default.
public struct SourceOptions: Codable, Equatable, Sendable {
    public enum Framing: String, Codable, Sendable, CaseIterable {
        /// One event per line (the line end is not part of the event). The default.
        case lines
        /// One event per NUL-terminated record (`find -print0`).
        case nul
        /// One event for the whole output.
        case whole
    }

    public enum Restart: String, Codable, Sendable, CaseIterable {
        /// A failure is terminal, as in the cold/hot articles. The default.
        case never
        /// A failure restarts the source after a backoff, up to `maxRestarts` times.
        case onFailure = "on-failure"
    }

    public var framing: Framing = .lines
    public var restart: Restart = .never
    public var maxRestarts: Int = 5
    /// Seconds before the first restart; doubled each time, at most 60.
    public var restartDelay: Double = 1
    /// Seconds between SIGTERM and SIGKILL when a source is stopped.
    public var grace: Double = 5
    /// Runs the command once at each tick (`schedule=*/5_*_*_*_*`): each run's output is
    /// appended, and its end does not end the stream. `nil`: one run, for the stream's life.
    public var schedule: CronSchedule?

    /// The one spelling of each option: its CREATE word, its JSON key, its declaration key.
    public enum Key: String, CodingKey, CaseIterable, Sendable {
        case framing, restart, grace, schedule
        case maxRestarts = "max_restarts"
        case restartDelay = "restart_delay"
    }

    /// Why a value was refused, in words for the person who gave it.
    public struct Invalid: Error, Equatable, Sendable, CustomStringConvertible {
        public let message: String
        public var description: String { message }
        public init(_ message: String) { self.message = message }
    }

    public init() {}

    /// From CREATE's `key=value` words (replayctl's flags and the declarations say them so too).
    public init(words: [String: String]) throws(Invalid) {
        for (word, value) in words {
            guard let key = Key(rawValue: word) else { throw Invalid("unknown source option \(word)") }
            try set(key, value)
        }
    }

    /// Sets one option from its text; throws what a valid value is.
    public mutating func set(_ key: Key, _ value: String) throws(Invalid) {
        switch key {
        case .framing:
            guard let framing = Framing(rawValue: value) else { throw Invalid("framing is lines, nul or whole") }
            self.framing = framing
        case .restart:
            guard let restart = Restart(rawValue: value) else { throw Invalid("restart is never or on-failure") }
            self.restart = restart
        case .maxRestarts:
            guard let n = Int(value), n >= 0 else { throw Invalid("max_restarts is a count") }
            maxRestarts = n
        case .restartDelay:
            guard let seconds = Double(value), seconds > 0 else { throw Invalid("restart_delay is seconds, more than 0") }
            restartDelay = seconds
        case .grace:
            guard let seconds = Double(value), seconds >= 0 else { throw Invalid("grace is seconds") }
            grace = seconds
        case .schedule:
            do throws(CronSchedule.Invalid) {
                schedule = try CronSchedule(value)
            } catch {
                throw Invalid("schedule: \(error.message)")
            }
        }
    }

    /// As CREATE's words: the options that differ from the defaults.
    public var words: [String: String] {
        let defaults = SourceOptions()
        var words: [String: String] = [:]
        if framing != defaults.framing { words[Key.framing.rawValue] = framing.rawValue }
        if restart != defaults.restart { words[Key.restart.rawValue] = restart.rawValue }
        if maxRestarts != defaults.maxRestarts { words[Key.maxRestarts.rawValue] = "\(maxRestarts)" }
        if restartDelay != defaults.restartDelay { words[Key.restartDelay.rawValue] = "\(restartDelay)" }
        if grace != defaults.grace { words[Key.grace.rawValue] = "\(grace)" }
        // One word on the line: its fields joined by `_`.
        if let schedule { words[Key.schedule.rawValue] = schedule.text.replacingOccurrences(of: " ", with: "_") }
        return words
    }

    // MARK: JSON, as the store keeps it

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        let defaults = SourceOptions()
        framing = try container.decodeIfPresent(Framing.self, forKey: .framing) ?? defaults.framing
        restart = try container.decodeIfPresent(Restart.self, forKey: .restart) ?? defaults.restart
        maxRestarts = try container.decodeIfPresent(Int.self, forKey: .maxRestarts) ?? defaults.maxRestarts
        restartDelay = try container.decodeIfPresent(Double.self, forKey: .restartDelay) ?? defaults.restartDelay
        grace = try container.decodeIfPresent(Double.self, forKey: .grace) ?? defaults.grace
        if let text = try container.decodeIfPresent(String.self, forKey: .schedule) {
            do throws(CronSchedule.Invalid) {
                schedule = try CronSchedule(text)
            } catch {
                throw DecodingError.dataCorruptedError(forKey: .schedule, in: container, debugDescription: error.message)
            }
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(framing, forKey: .framing)
        try container.encode(restart, forKey: .restart)
        try container.encode(maxRestarts, forKey: .maxRestarts)
        try container.encode(restartDelay, forKey: .restartDelay)
        try container.encode(grace, forKey: .grace)
        try container.encodeIfPresent(schedule?.text, forKey: .schedule)
    }

    /// The JSON object the store keeps (keys sorted, so equal options are equal text).
    public var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        // Encoding six plain values cannot fail.
        return String(decoding: try! encoder.encode(self), as: UTF8.self)
    }

    /// From the JSON the store keeps; a text that is not such an object is `Invalid`.
    public init(json: String) throws(Invalid) {
        do {
            self = try JSONDecoder().decode(SourceOptions.self, from: Data(json.utf8))
        } catch {
            throw Invalid("source options are not valid JSON options (\(json.prefix(200))): \(error)")
        }
    }
}
