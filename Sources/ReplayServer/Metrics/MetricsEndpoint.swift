import Foundation
import Hummingbird
import Prometheus
import ReplayModel
import ReplayProtocol
import ReplayStore
import ReplaySync

/// `GET /metrics`: the Prometheus text of the process's registry, after the per-stream
/// gauges (last sequence, retained events, durable consumers' lag, consumer groups' pending,
/// delivered, redelivered and dead-lettered events, oldest pending age, lag; derivations' lag,
/// computed and failed events, rate, state size and status; sources' runs and status) are
/// brought up to date from the hubs and the catalog, and the process's descriptors from
/// /proc: read at scrape time, in memory, for every stream there is.
struct MetricsEndpoint: Sendable {
    let registry: PrometheusCollectorRegistry
    let hubs: StreamHubs
    let store: EventStore
    let derivations: DerivationRegistry?
    let sources: SourceRegistry?
    /// The per-stream gauges last exported, by labels, so that a deleted stream's go too.
    private let exported = Locked<[String: Gauge]>([:])

    init(
        registry: PrometheusCollectorRegistry, hubs: StreamHubs, store: EventStore, derivations: DerivationRegistry? = nil,
        sources: SourceRegistry? = nil
    ) {
        self.registry = registry
        self.hubs = hubs
        self.store = store
        self.derivations = derivations
        self.sources = sources
    }

    func respond() -> Response {
        refreshStreamGauges()
        var fields = HTTPFields()
        fields[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
        fields[.cacheControl] = "no-store"
        return Response(status: .ok, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer())))
    }

    // Descriptors are not Sendable: made when used, at scrape time.
    static var lastSequence: MetricNameDescriptor {
        .init(namespace: "replay", metricName: "stream_last", unitName: "seq", helpText: "The stream's last sequence number.")
    }

    static var retainedEvents: MetricNameDescriptor {
        .init(namespace: "replay", metricName: "stream_retained", unitName: "events", helpText: "Events the stream retains.")
    }

    static var retainedBytes: MetricNameDescriptor {
        .init(namespace: "replay", metricName: "stream_retained", unitName: "bytes", helpText: "Payload bytes the stream retains.")
    }

    static var subscribers: MetricNameDescriptor {
        .init(namespace: "replay", metricName: "stream", unitName: "subscribers", helpText: "Socket subscriptions to the stream.")
    }

    static var consumerLag: MetricNameDescriptor {
        .init(
            namespace: "replay", metricName: "consumer_lag", unitName: "events",
            helpText: "Events committed after a durable consumer's acknowledged position.")
    }

    /// A consumer group's figures: the counts are kept with the group in the database, so
    /// they are gauges that only rise (since the group was created), the same on every
    /// daemon sharing a PostgreSQL database.
    static func group(_ name: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
        .init(namespace: "replay", metricName: "group_\(name)", unitName: unit, helpText: help)
    }

    static var groupFigures: [(name: String, unit: String, help: String, value: @Sendable (GroupDescription) -> Double)] {
        [
            ("pending", "events", "Events a consumer group handed out and that were not acknowledged.", { Double($0.pending) }),
            ("delivered", "events", "Events a consumer group handed out for the first time.", { Double($0.delivered) }),
            ("redelivered", "events", "Events a consumer group handed out again.", { Double($0.redelivered) }),
            ("dead_lettered", "events", "Events a consumer group gave up on after max_deliver.", { Double($0.deadLettered) }),
            (
                "oldest_pending", "seconds", "Since the oldest pending event was first handed out.",
                { Double($0.oldestPendingMs ?? 0) / 1000 }
            ),
            ("lag", "events", "Events committed and not handed out by the group yet.", { Double($0.lag) }),
        ]
    }

    /// A derivation's figures, by derived stream: its lag behind its inputs, the input
    /// events it computed and failed on, its rate, its state's size, and its status (1 for
    /// the status it is in, 0 for the others, as a state set).
    static var derivationFigures: [(name: String, unit: String, help: String, value: @Sendable (DerivationDescription) -> Double)] {
        [
            ("lag", "events", "Input events committed and not yet computed by the derivation.", { Double($0.lag) }),
            ("processed", "events", "Input events the derivation computed.", { Double($0.processed) }),
            ("errors", "events", "Input events whose computation failed.", { Double($0.errors) }),
            ("rate", "events_per_second", "Input events computed per second, over the last steps.", { $0.rate }),
            ("state", "bytes", "The derivation's stored state, in bytes of JSON.", { Double($0.stateBytes) }),
        ]
    }

    /// A derivation's figure; an empty `unit` is left out of its name (`replay_derivation_status`).
    static func derivation(_ name: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
        .init(namespace: "replay", metricName: "derivation_\(name)", unitName: unit, helpText: help)
    }

    /// A source's runs: a gauge that only rises while the daemon runs, so that
    /// `increase(...)` over a window counts its restarts.
    static var sourceStarts: MetricNameDescriptor {
        .init(namespace: "replay", metricName: "source", unitName: "starts", helpText: "Runs of the stream's source started since the daemon started.")
    }

    static var sourceStatus: MetricNameDescriptor {
        .init(namespace: "replay", metricName: "source_status", unitName: "", helpText: "Whether the stream's source is in this state (1) or not (0).")
    }

    static let sourceStates = ["not connected", "running", "restarting", "stopped", "completed", "failed"]

    // The names every Prometheus client library gives these, so that existing dashboards
    // and alerts for processes read them as they are.
    static var openDescriptors: MetricNameDescriptor {
        .init(metricName: "process_open_fds", unitName: "", helpText: "Number of open file descriptors.")
    }

    static var maxDescriptors: MetricNameDescriptor {
        .init(metricName: "process_max_fds", unitName: "", helpText: "Maximum number of open file descriptors.")
    }

    private func refreshStreamGauges() {
        var values: [String: (descriptor: MetricNameDescriptor, labels: [(String, String)], value: Double)] = [:]
        func set(_ descriptor: MetricNameDescriptor, _ labels: [(String, String)], _ value: Double) {
            values[descriptor.name + labels.map { "\($0.0)=\($0.1)" }.joined(separator: ",")] = (descriptor, labels, value)
        }
        let views = StreamViews(hubs: hubs, store: store, sources: nil, derivations: derivations)
        let now = Timestamp.millis(Date())
        for hub in hubs.all {
            let info = hub.info
            guard !info.isSoftDeleted else { continue }
            set(Self.lastSequence, [("stream", info.name)], Double(info.lastSequence))
            set(Self.retainedEvents, [("stream", info.name)], Double(info.eventCount))
            set(Self.retainedBytes, [("stream", info.name)], Double(info.byteCount))
            set(Self.subscribers, [("stream", info.name)], Double(hub.subscriberCount))
            if let source = sources?.describe(info.name) {
                set(Self.sourceStarts, [("stream", info.name)], Double(source.starts))
                for state in Self.sourceStates {
                    set(Self.sourceStatus, [("stream", info.name), ("status", state)], source.state == state ? 1 : 0)
                }
            }
            for consumer in views.consumers(of: info) {
                set(Self.consumerLag, [("stream", info.name), ("consumer", consumer.name)], Double(consumer.lag))
            }
            for group in views.groups(of: info, now: now) {
                for figure in Self.groupFigures {
                    set(Self.group(figure.name, figure.unit, figure.help), [("stream", info.name), ("group", group.name)], figure.value(group))
                }
            }
        }
        for derivation in derivations?.all ?? [] {
            for figure in Self.derivationFigures {
                set(Self.derivation(figure.name, figure.unit, figure.help), [("stream", derivation.stream)], figure.value(derivation))
            }
            for status in [DerivationDescription.Status.running, .waiting, .standby, .stopped, .completed] {
                set(
                    Self.derivation("status", "", "Whether the derivation is in this status (1) or not (0)."),
                    [("stream", derivation.stream), ("status", status.rawValue)], derivation.status == status ? 1 : 0)
            }
        }
        if let open = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") {
            // Less the one this listing opened.
            set(Self.openDescriptors, [], Double(open.count - 1))
            set(Self.maxDescriptors, [], Double(FileLimits.current))
        }
        exported.withLock { exported in
            for (key, gauge) in exported where values[key] == nil {
                registry.unregisterGauge(gauge)
                exported[key] = nil
            }
            for (key, value) in values {
                let gauge = exported[key] ?? registry.makeGauge(descriptor: value.descriptor, labels: value.labels)
                gauge.set(value.value)
                exported[key] = gauge
            }
        }
    }
}
