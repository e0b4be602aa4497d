import Foundation
import ReplayProtocol
import ReplayStore

/// Streams declared in a configuration file that the daemon reads at start: the way to
/// give streams sources when `--no-socket-sources` refuses them over the socket.
///
/// ```json
/// {"streams": [
///   {"name": "uptime", "capacity": 100, "source": "while true; do uptime; sleep 60; done",
///    "connect": "eager", "restart": "on-failure"}
/// ]}
/// ```
struct StreamDeclarations: Decodable {
    struct Stream: Decodable {
        var name: String
        /// A count, or absent for the daemon's default; `-1` for unlimited.
        var capacity: Int?
        var maxBytes: Int?
        var maxAge: Double?
        var source: String?
        var connect: String?
        var framing: String?
        var restart: String?
        var maxRestarts: Int?
        var restartDelay: Double?
        var grace: Double?

        enum CodingKeys: String, CodingKey {
            case name, capacity, source, connect, framing, restart, grace
            case maxBytes = "max_bytes"
            case maxAge = "max_age"
            case maxRestarts = "max_restarts"
            case restartDelay = "restart_delay"
        }
    }

    var streams: [Stream]

    static func load(_ path: String) throws -> StreamDeclarations {
        do {
            return try JSONDecoder().decode(StreamDeclarations.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw ReplayServerError("cannot read the stream declarations in \(path): \(error)")
        }
    }

    /// Creates what is missing; a stream that exists with other settings stops the start.
    func apply(to store: EventStore, defaultCapacity: Int?) async throws {
        for stream in streams {
            var words: [String: String] = [:]
            if let framing = stream.framing { words["framing"] = framing }
            if let restart = stream.restart { words["restart"] = restart }
            if let n = stream.maxRestarts { words["max_restarts"] = "\(n)" }
            if let seconds = stream.restartDelay { words["restart_delay"] = "\(seconds)" }
            if let seconds = stream.grace { words["grace"] = "\(seconds)" }
            var source: StreamSource?
            if let command = stream.source {
                guard let mode = StreamSource.ConnectMode(rawValue: stream.connect ?? CreateOptions.defaultConnect) else {
                    throw ReplayServerError("stream \(stream.name): connect is eager, lazy or refcount")
                }
                do {
                    source = StreamSource(command: command, connect: mode, options: try SourceSettings(words: words).json)
                } catch {
                    throw ReplayServerError("stream \(stream.name): \(error.message)")
                }
            }
            let capacity: Int? = switch stream.capacity {
            case nil: defaultCapacity
            case let n? where n < 0: nil
            case let n?: n
            }
            let config = StreamConfig(capacity: capacity, maxBytes: stream.maxBytes, maxAge: stream.maxAge, source: source)
            do {
                _ = try await store.create(stream.name, config: config)
            } catch .streamExists {
                throw ReplayServerError(
                    "stream \(stream.name) exists with other settings than its declaration; delete it (replayctl delete \(stream.name)) or change the declaration")
            } catch {
                throw ReplayServerError("stream \(stream.name): \(error)")
            }
        }
    }
}
