import AsyncHTTPClient
import Foundation
import NIOCore

/// Webhook deliveries' outbound HTTP (async-http-client): a signed POST, with a timeout, and
/// what came of it. Redirects are not followed: a receiver that moves must be subscribed
/// again at its new URL (following one would let a public receiver point the daemon at a
/// private address the URL rule refused).
struct WebhookSender: Sendable {
    enum Outcome: Sendable, Equatable {
        /// A 2xx answer; `done` if its body was `{"done": true}`.
        case accepted(done: Bool)
        case failed(String)
    }

    let client: HTTPClient
    let timeout: TimeAmount

    init(timeout: TimeAmount = .seconds(10)) {
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        configuration.timeout = .init(connect: .seconds(5), read: timeout)
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        self.timeout = timeout
    }

    func shutdown() async {
        try? await client.shutdown()
    }

    /// `traceParent`: the W3C trace context the receiver continues, if any.
    func deliver(_ body: Data, to url: String, signedBy keys: SigningKeys, traceParent: String? = nil) async -> Outcome {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        if let traceParent { request.headers.add(name: "traceparent", value: traceParent) }
        do {
            request.headers.add(name: "Webhook-Signature", value: try keys.signature(of: body, at: Date()))
        } catch {
            return .failed("the delivery could not be signed: \(error)")
        }
        request.body = .bytes(ByteBuffer(bytes: body))
        do {
            let response = try await client.execute(request, timeout: timeout)
            let answer = try await response.body.collect(upTo: 64 * 1024)
            guard (200..<300).contains(response.status.code) else { return .failed("the receiver answered \(response.status.code)") }
            let parsed = (try? JSONSerialization.jsonObject(with: Data(answer.readableBytesView))) as? [String: Any]
            return .accepted(done: parsed?["done"] as? Bool == true)
        } catch {
            return .failed("\(error)")
        }
    }
}
