import Foundation
import OTel
import ServiceLifecycle
import Tracing

/// Where replayd sends its spans (`--otlp-endpoint`): OTLP over HTTP, through swift-otel.
public struct TracingSettings: Sendable, Equatable {
    /// OTLP/HTTP's two encodings.
    public enum Encoding: String, Sendable, CaseIterable {
        case protobuf = "http/protobuf"
        case json = "http/json"
    }

    /// The collector's base URL (`/v1/traces` is added, as for
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`), or the traces URL itself.
    public var endpoint: String
    public var encoding: Encoding = .protobuf
    /// The `service.name` of every span.
    public var serviceName = "replayd"

    public init(endpoint: String) {
        self.endpoint = endpoint
    }

    /// The traces URL: the endpoint if it already ends with `/v1/traces`, else with it added.
    var tracesURL: String {
        if endpoint.hasSuffix("/v1/traces") { return endpoint }
        return (endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint) + "/v1/traces"
    }

    /// The tracer, and the service that batches and exports its spans (run before the
    /// daemon's other services, so stopped after them: the spans of the drain go out too).
    /// The OpenTelemetry environment variables (`OTEL_BSP_SCHEDULE_DELAY`,
    /// `OTEL_TRACES_SAMPLER`, `OTEL_EXPORTER_OTLP_HEADERS`, …) apply on top, as the
    /// specification says. Its own logging, metrics and logs are not started: replayd
    /// keeps its own (journald, /metrics).
    func makeTracer() throws -> (tracer: any Tracer, service: any Service) {
        var configuration = OTel.Configuration.default
        configuration.serviceName = serviceName
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        configuration.diagnosticLogLevel = .warning
        configuration.traces.otlpExporter.endpoint = tracesURL
        configuration.traces.otlpExporter.protocol = encoding == .json ? .httpJSON : .httpProtobuf
        let backend = try OTel.makeTracingBackend(configuration: configuration)
        return (backend.factory, backend.service)
    }
}
