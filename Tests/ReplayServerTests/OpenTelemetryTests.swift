import Foundation
import ReplayProtocol
import ReplayTesting
import Testing

/// `--otlp-endpoint`: the real replayd exports its spans of traced events over OTLP/HTTP
/// to a collector of the test's own, each span a child of the publisher's trace context;
/// a webhook delivery carries its own span's context on to the receiver.
@Suite("replayd: OpenTelemetry spans", .timeLimit(.minutes(5)))
struct OpenTelemetryTests {
    static let json = [("Content-Type", "application/json")]
    /// Trace contexts of four publishers: trace id, parent (span) id.
    static let socket = ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7")
    static let group = ("5bf92f3577b34da6a3ce929d0e0e4736", "10f067aa0ba902b7")
    static let http = ("6bf92f3577b34da6a3ce929d0e0e4736", "20f067aa0ba902b7")
    static let hook = ("7bf92f3577b34da6a3ce929d0e0e4736", "30f067aa0ba902b7")

    static func traceparent(_ ids: (String, String)) -> String { "00-\(ids.0)-\(ids.1)-01" }

    @Test func tracedEventsSpansContinueTheirPublishersTraces() async throws {
        let collector = try await WebhookReceiver()
        let receiver = try await WebhookReceiver()
        defer {
            Task {
                await collector.close()
                await receiver.close()
            }
        }
        try await withTemporaryDirectory { directory in
            let daemon = try await TestDaemon.start(
                in: directory,
                arguments: ["--http", "127.0.0.1:0", "--otlp-endpoint", "http://127.0.0.1:\(collector.port)", "--otlp-protocol", "http/json"],
                // Spans leave in batches: every 100 ms here, where the default waits 5 s.
                service: .init(environment: ["OTEL_BSP_SCHEDULE_DELAY": "100"]))
            let http = try HTTPTestClient(address: try await daemon.httpAddress())
            try await withWireClient(daemon.socketPath) { client in
                // A subscriber, one whose filter keeps nothing (no delivery, so no span), a
                // group's member, an untraced event.
                try await client.subscribe("orders", sid: "s")
                try await client.send("SUB orders none all filter=13\r\nselect(false)\r\n")
                #expect(try await client.expectFrame() == .ok)
                try await client.send("PUB orders trace=\(Self.traceparent(Self.socket)) 1\r\na\r\nPUB quiet 1\r\nq\r\n")
                _ = try await client.frames(3)
                try await client.send("PUB jobs trace=\(Self.traceparent(Self.group)) 1\r\nj\r\n")
                #expect(try await client.expectFrame() == .published(sequence: 1))
                try await client.send(.subscribeGroup(stream: "jobs", sid: "w", start: .all, options: GroupOptions(group: "workers")))
                _ = try await client.frames(2)
                try await client.send(.ack(sid: "w", sequence: 1))
                #expect(try await client.expectFrame() == .ok)
            }
            // HTTP: a traced POST, and a webhook woken by a traced event.
            #expect(try await http.request("PUT", "/v1/stream/web", headers: Self.json).status == 201)
            let traced = Self.json + [("traceparent", Self.traceparent(Self.http))]
            #expect(try await http.request("POST", "/v1/stream/web", headers: traced, body: "1").status == 204)
            let subscription = #"{"type": "webhook", "streams": ["hooked"], "webhook": {"url": "\#(receiver.url)"}}"#
            #expect(try await http.request("PUT", "/v1/stream/__ds/subscriptions/hooks", headers: Self.json, body: subscription).status == 201)
            let hooked = Self.json + [("traceparent", Self.traceparent(Self.hook))]
            #expect(try await http.request("PUT", "/v1/stream/hooked", headers: hooked, body: "1").status == 201)
            let delivery = try #require(try await receiver.waitFor(1).first)

            let spans = try await Self.spans(from: collector) { spans in
                ["publish orders", "deliver orders", "publish jobs", "hand_out jobs", "settle jobs", "publish web", "webhook hooked"]
                    .allSatisfy { name in spans.contains { $0.name == name } }
            }
            await daemon.stop()

            func only(_ name: String) throws -> Span {
                let named = spans.filter { $0.name == name }
                #expect(named.count == 1, "\(name): \(named.count)")
                return try #require(named.first)
            }
            for (name, ids) in [
                ("publish orders", Self.socket), ("deliver orders", Self.socket), ("publish jobs", Self.group), ("hand_out jobs", Self.group),
                ("settle jobs", Self.group), ("publish web", Self.http), ("webhook hooked", Self.hook),
            ] {
                let span = try only(name)
                #expect(span.traceID == ids.0 && span.parentID == ids.1, "\(name) continues its publisher's trace")
                #expect(span.attributes["messaging.system"] == "replay")
                #expect(span.attributes["messaging.destination.name"] == String(name.split(separator: " ")[1]))
            }
            #expect(try only("publish orders").attributes["messaging.message.id"] == "1")
            #expect(try only("publish orders").kind == 2, "SERVER")
            #expect(try only("settle jobs").attributes["messaging.consumer.group.name"] == "workers")
            #expect(try only("settle jobs").attributes["replay.settle"] == "ack")
            #expect(try only("webhook hooked").kind == 3, "CLIENT")
            #expect(!spans.contains { $0.name.hasSuffix(" quiet") }, "an untraced event has no spans")
            #expect(spans.allSatisfy { $0.service == "replayd" })
            #expect(collector.deliveries.allSatisfy { $0.headers["content-type"] == "application/json" })

            // The receiver continues from the delivery's span.
            let webhook = try only("webhook hooked")
            #expect(delivery.headers["traceparent"] == "00-\(Self.hook.0)-\(webhook.spanID)-01")
        }
    }

    @Test func withoutAnEndpointAWebhookPassesThePublishersTraceContextOn() async throws {
        let receiver = try await WebhookReceiver()
        defer { Task { await receiver.close() } }
        try await withHTTP { _, http in
            let subscription = #"{"type": "webhook", "streams": ["hooked"], "webhook": {"url": "\#(receiver.url)"}}"#
            #expect(try await http.request("PUT", "/v1/stream/__ds/subscriptions/hooks", headers: Self.json, body: subscription).status == 201)
            let hooked = Self.json + [("traceparent", Self.traceparent(Self.hook))]
            #expect(try await http.request("PUT", "/v1/stream/hooked", headers: hooked, body: "1").status == 201)
            let delivery = try #require(try await receiver.waitFor(1).first)
            #expect(delivery.headers["traceparent"] == Self.traceparent(Self.hook))
        }
    }

    /// A span as OTLP/JSON carries it (swift-otel writes ids as base64, the
    /// specification as hex: either is read).
    struct Span {
        let name: String
        let traceID: String
        let spanID: String
        let parentID: String
        let kind: Int
        let attributes: [String: String]
        let service: String?
    }

    /// Every span the collector received, once `enough` holds of them (polled: the
    /// exporter sends on its own schedule).
    static func spans(from collector: WebhookReceiver, until enough: ([Span]) -> Bool) async throws -> [Span] {
        var spans: [Span] = []
        for _ in 0..<500 {
            spans = collector.deliveries.flatMap { parse($0.json) }
            if enough(spans) { return spans }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestFailure("the collector got \(spans.map(\.name))")
    }

    static func parse(_ export: [String: Any]) -> [Span] {
        (export["resourceSpans"] as? [[String: Any]] ?? []).flatMap { resource -> [Span] in
            let service = strings((resource["resource"] as? [String: Any])?["attributes"])["service.name"]
            return (resource["scopeSpans"] as? [[String: Any]] ?? []).flatMap { scope in
                (scope["spans"] as? [[String: Any]] ?? []).map { span in
                    Span(
                        name: span["name"] as? String ?? "", traceID: hex(span["traceId"]), spanID: hex(span["spanId"]),
                        parentID: hex(span["parentSpanId"]), kind: span["kind"] as? Int ?? 0, attributes: strings(span["attributes"]),
                        service: service)
                }
            }
        }
    }

    static func strings(_ attributes: Any?) -> [String: String] {
        var values: [String: String] = [:]
        for attribute in attributes as? [[String: Any]] ?? [] {
            guard let key = attribute["key"] as? String, let value = attribute["value"] as? [String: Any] else { continue }
            values[key] = (value["stringValue"] as? String) ?? (value["intValue"].map { "\($0)" })
        }
        return values
    }

    static func hex(_ id: Any?) -> String {
        guard let text = id as? String, !text.isEmpty else { return "" }
        if text.count == 32 || text.count == 16, text.allSatisfy(\.isHexDigit) { return text.lowercased() }
        guard let bytes = Data(base64Encoded: text) else { return text }
        return bytes.map { String(format: "%02x", $0) }.joined()
    }
}
