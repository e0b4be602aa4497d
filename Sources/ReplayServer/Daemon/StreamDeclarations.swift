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
            let config: StreamConfig
            do {
                config = try stream.options.streamConfig(defaultCapacity: defaultCapacity)
            } catch {
                throw ReplayServerError("stream \(stream.name): \(error.message)")
            }
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

extension StreamDeclarations.Stream {
    /// The declaration as CREATE's options (`capacity: -1` is unlimited).
    var options: CreateOptions {
        var words: [String: String] = [:]
        if let framing { words["framing"] = framing }
        if let restart { words["restart"] = restart }
        if let maxRestarts { words["max_restarts"] = "\(maxRestarts)" }
        if let restartDelay { words["restart_delay"] = "\(restartDelay)" }
        if let grace { words["grace"] = "\(grace)" }
        let limit: CreateOptions.Capacity? = capacity.map { $0 < 0 ? .unlimited : .count($0) }
        return CreateOptions(capacity: limit, maxBytes: maxBytes, maxAge: maxAge, source: source, connect: connect, sourceOptions: words)
    }
}
