import Foundation
import ReplayStore

/// How a source's output is cut into events, whether it is restarted, and how long it is
/// given to stop: the `options` JSON stored with the stream's source.
struct SourceSettings: Codable, Equatable, Sendable {
    enum Framing: String, Codable, Sendable {
        /// One event per line (the line end is not part of the event). The default.
        case lines
        /// One event per NUL-terminated record (`find -print0`).
        case nul
        /// One event for the whole output.
        case whole
    }

    enum Restart: String, Codable, Sendable {
        /// A failure is terminal, as in the articles. The default.
        case never
        /// A failure restarts the source after a backoff, up to `maxRestarts` times.
        case onFailure = "on-failure"
    }

    var framing: Framing = .lines
    var restart: Restart = .never
    var maxRestarts: Int = 5
    /// Seconds before the first restart; doubled each time, at most 60.
    var restartDelay: Double = 1
    /// Seconds between SIGTERM and SIGKILL when a source is stopped.
    var grace: Double = 5

    enum CodingKeys: String, CodingKey {
        case framing, restart, grace
        case maxRestarts = "max_restarts"
        case restartDelay = "restart_delay"
    }

    init() {}

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        framing = try container.decodeIfPresent(Framing.self, forKey: .framing) ?? .lines
        restart = try container.decodeIfPresent(Restart.self, forKey: .restart) ?? .never
        maxRestarts = try container.decodeIfPresent(Int.self, forKey: .maxRestarts) ?? 5
        restartDelay = try container.decodeIfPresent(Double.self, forKey: .restartDelay) ?? 1
        grace = try container.decodeIfPresent(Double.self, forKey: .grace) ?? 5
    }

    /// From CREATE's `key=value` words; throws a message for a bad value.
    init(words: [String: String]) throws(SourceSettingsError) {
        for (key, value) in words {
            switch key {
            case "framing":
                guard let framing = Framing(rawValue: value) else { throw SourceSettingsError("framing is lines, nul or whole") }
                self.framing = framing
            case "restart":
                guard let restart = Restart(rawValue: value) else { throw SourceSettingsError("restart is never or on-failure") }
                self.restart = restart
            case "max_restarts":
                guard let n = Int(value), n >= 0 else { throw SourceSettingsError("max_restarts is a count") }
                maxRestarts = n
            case "restart_delay":
                guard let seconds = Double(value), seconds > 0 else { throw SourceSettingsError("restart_delay is seconds, more than 0") }
                restartDelay = seconds
            case "grace":
                guard let seconds = Double(value), seconds >= 0 else { throw SourceSettingsError("grace is seconds") }
                grace = seconds
            default:
                throw SourceSettingsError("unknown source option \(key)")
            }
        }
    }

    var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: (try? encoder.encode(self)) ?? Data("{}".utf8), as: UTF8.self)
    }

    static func parse(_ json: String?) -> SourceSettings {
        guard let json, let settings = try? JSONDecoder().decode(SourceSettings.self, from: Data(json.utf8)) else {
            return SourceSettings()
        }
        return settings
    }
}

struct SourceSettingsError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}
