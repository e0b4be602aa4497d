import Foundation
import ReplayAuth
import ReplayModel
import ReplayProtocol
import ReplayStore

/// Streams declared in a configuration file that the daemon reads at start: the way to
/// give streams sources when `--no-socket-sources` refuses them over the socket.
///
/// ```json
/// {"streams": [
///   {"name": "uptime", "capacity": 100, "source": "while true; do uptime; sleep 60; done",
///    "connect": "eager", "restart": "on-failure"},
///   {"name": "jobs", "capacity": 10000, "keep_unacked": 100000},
///   {"name": "sessions", "event_ttl": 1800},
///   {"name": "customers", "compact": true, "tombstone_retention": 3600}
/// ],
///  "derived": [
///   {"name": "big-orders", "inputs": ["orders"], "program": "select(.amount > 100)", "capacity": 1000}
/// ]}
/// ```
struct StreamDeclarations: Decodable {
    /// A derived stream: its definition's keys (`DerivationSpec`) beside its name, its
    /// capacity if it is new, and `rebuild` to recompute it when the definition changed.
    struct Derived: Decodable {
        var name: String
        var capacity: Int?
        var rebuild: Bool
        var spec: DerivationSpec

        enum CodingKeys: String, CodingKey { case name, capacity, rebuild }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            name = try container.decode(String.self, forKey: .name)
            capacity = try container.decodeIfPresent(Int.self, forKey: .capacity)
            rebuild = try container.decodeIfPresent(Bool.self, forKey: .rebuild) ?? false
            spec = try DerivationSpec(from: decoder)
        }
    }

    struct Stream: Decodable {
        var name: String
        /// A count, or absent for the daemon's default; `-1` for unlimited.
        var capacity: Int?
        var maxBytes: Int?
        var maxAge: Double?
        /// Events a consumer group has not acknowledged kept beyond the limits, as
        /// `create --keep-unacked`.
        var keepUnacked: Int?
        /// How long events live when their publish does not say, in seconds, as
        /// `create --event-ttl`.
        var eventTTL: Double?
        /// Key compaction, and how long tombstones stay, as `create --compact
        /// --tombstone-retention`.
        var compact: Bool?
        var tombstoneRetention: Double?
        var source: String?
        var connect: String?
        /// The source's options, at the declaration's top level under their own keys
        /// (`SourceOptions.Key`); `nil` when none is given.
        var sourceOptions: SourceOptions?

        enum CodingKeys: String, CodingKey {
            case name, capacity, source, connect
            case maxBytes = "max_bytes"
            case maxAge = "max_age"
            case keepUnacked = "keep_unacked"
            case eventTTL = "event_ttl"
            case compact
            case tombstoneRetention = "tombstone_retention"
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            name = try container.decode(String.self, forKey: .name)
            capacity = try container.decodeIfPresent(Int.self, forKey: .capacity)
            maxBytes = try container.decodeIfPresent(Int.self, forKey: .maxBytes)
            maxAge = try container.decodeIfPresent(Double.self, forKey: .maxAge)
            keepUnacked = try container.decodeIfPresent(Int.self, forKey: .keepUnacked)
            eventTTL = try container.decodeIfPresent(Double.self, forKey: .eventTTL)
            compact = try container.decodeIfPresent(Bool.self, forKey: .compact)
            tombstoneRetention = try container.decodeIfPresent(Double.self, forKey: .tombstoneRetention)
            source = try container.decodeIfPresent(String.self, forKey: .source)
            connect = try container.decodeIfPresent(String.self, forKey: .connect)
            let given = try decoder.container(keyedBy: SourceOptions.Key.self).allKeys
            sourceOptions = given.isEmpty ? nil : try SourceOptions(from: decoder)
        }
    }

    var streams: [Stream]
    var derived: [Derived]
    /// Who may do what over the socket (`SocketRules`).
    var access: [AccessRule]

    struct AccessRule: Decodable {
        var uid: UInt32?
        var gid: UInt32?
        var streams: String
        var ops: [String]
    }

    enum CodingKeys: String, CodingKey { case streams, derived, access }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        streams = try container.decodeIfPresent([Stream].self, forKey: .streams) ?? []
        derived = try container.decodeIfPresent([Derived].self, forKey: .derived) ?? []
        access = try container.decodeIfPresent([AccessRule].self, forKey: .access) ?? []
    }

    /// The socket's access rules; `nil` when there are none. A rule without a uid or gid, a
    /// bad pattern or an unknown operation stops the start.
    func socketRules(in path: String) throws -> SocketRules? {
        guard !access.isEmpty else { return nil }
        return SocketRules(
            rules: try access.map { rule in
                guard rule.uid != nil || rule.gid != nil else { throw ReplayServerError("\(path): an access rule names a \"uid\" or a \"gid\"") }
                guard case .success(let pattern) = StreamPattern.parse(rule.streams) else {
                    throw ReplayServerError("\(path): '\(rule.streams)' is not a stream pattern")
                }
                let operations = try Set(
                    rule.ops.map { op in
                        guard let operation = StreamOperation(rawValue: op) else {
                            throw ReplayServerError("\(path): '\(op)' is not an operation (read, write, admin, claim)")
                        }
                        return operation
                    })
                return SocketRules.Rule(uid: rule.uid, gid: rule.gid, grant: Grant(pattern: pattern, operations: operations))
            })
    }

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
                    "stream \(stream.name) exists with other settings than its declaration; delete it (replayctl delete \(stream.name)) or change the declaration"
                )
            } catch {
                throw ReplayServerError("stream \(stream.name): \(error)")
            }
        }
        for derived in derived {
            do throws(ReplayError) {
                _ = try DerivationRegistry.checked(derived.spec.json, for: derived.name)
            } catch {
                throw ReplayServerError("derived stream \(derived.name): \(error.message)")
            }
            let capacity = derived.capacity.map { $0 < 0 ? nil : $0 } ?? defaultCapacity
            let definition = DerivationDefinition(
                stream: derived.name, spec: derived.spec, config: StreamConfig(capacity: capacity), rebuild: derived.rebuild)
            do {
                _ = try await store.define(definition)
            } catch {
                throw ReplayServerError("derived stream \(derived.name): \(error)")
            }
        }
    }
}

extension StreamDeclarations.Stream {
    /// The declaration as CREATE's options (`capacity: -1` is unlimited).
    var options: CreateOptions {
        // Every option given is a word, even one equal to its default, so that options
        // without a source are refused as over the socket.
        var words = sourceOptions?.words ?? [:]
        if let sourceOptions, words.isEmpty { words[SourceOptions.Key.framing.rawValue] = sourceOptions.framing.rawValue }
        let limit: CreateOptions.Capacity? = capacity.map { $0 < 0 ? .unlimited : .count($0) }
        return CreateOptions(
            capacity: limit, maxBytes: maxBytes, maxAge: maxAge, source: source, connect: connect, sourceOptions: words, keepUnacked: keepUnacked,
            eventTTL: eventTTL, compact: compact ?? false, tombstoneRetention: tombstoneRetention)
    }
}
