import Foundation
import Hummingbird
import NIOCore
import ReplayModel

/// The subscription API under the protocol's reserved `__ds` prefix of the stream root
/// (Durable Streams §7), routed before the streams (whose catch-all would otherwise take
/// `__ds/…` for a stream name):
///
/// - `PUT|GET|DELETE __ds/subscriptions/<id>`; `POST …/streams`, `DELETE …/streams/<path>`;
/// - `POST …/claim`, `…/ack`, `…/release` (pull-wake workers), `…/callback` (webhooks);
/// - `GET __ds/jwks.json`, the key webhook signatures verify with.
struct SubscriptionRoutes: Sendable {
    static let root = StreamEndpointPrefix.trimmed + "/" + SubscriptionConfig.reservedPrefix
    let subscriptions: Subscriptions
    let webhookTargets: WebhookTargetRule

    /// The actions whose caller proves itself with its wake's token.
    static func carriesWakeToken(_ path: String) -> Bool {
        path.hasPrefix(root + "/subscriptions/") && (path.hasSuffix("/ack") || path.hasSuffix("/release") || path.hasSuffix("/callback"))
    }

    /// The signing keys are public; a wake's actions carry its token; a claim needs `claim`
    /// on every stream, and the rest of the API `admin` on every stream.
    static func access(_ path: String) -> RequestAccess? {
        guard path.hasPrefix(root + "/") else { return nil }
        if path == root + "/jwks.json" { return .open }
        if carriesWakeToken(path) { return .wakeToken }
        if path.hasSuffix("/claim") { return .everywhere(.claim) }
        return .everywhere(.admin)
    }

    func add<Context: RequestContext>(to router: Router<Context>) {
        let group = router.group(RouterPath(Self.root))
        group.get("jwks.json") { _, _ in
            SubscriptionJSON.response(.ok, subscriptions.keys.jwks, contentType: "application/jwk-set+json")
        }
        // Not in the protocol: every subscription, as GET of one answers it (the live view's list).
        group.get("subscriptions") { _, _ in
            SubscriptionJSON.response(.ok, body: await subscriptions.list())
        }
        group.put("subscriptions/:id") { request, context in await answer { try await put(try id(context), request) } }
        group.get("subscriptions/:id") { _, context in
            await answer {
                let found = try await subscriptions.get(try id(context))
                return SubscriptionJSON.response(.ok, body: await subscriptions.body(of: found))
            }
        }
        group.delete("subscriptions/:id") { _, context in
            await answer {
                try await subscriptions.delete(try id(context))
                return Response(status: .noContent)
            }
        }
        group.post("subscriptions/:id/streams") { request, context in
            await answer {
                let body = try SubscriptionJSON.object(try await collect(request))
                guard let list = body["streams"] as? [String], !list.isEmpty else {
                    throw HTTPProblem.invalid("the body names its 'streams': [\"name\", …]")
                }
                try await subscriptions.add(try SubscriptionConfig.names(list), to: try id(context))
                return Response(status: .noContent)
            }
        }
        group.delete("subscriptions/:id/streams/**") { _, context in
            await answer {
                let raw = context.parameters.get(String(Parameters.recursiveCaptureKey)) ?? ""
                let stream = try SubscriptionConfig.names([raw.removingPercentEncoding ?? raw])[0]
                try await subscriptions.remove(stream, from: try id(context))
                return Response(status: .noContent)
            }
        }
        group.post("subscriptions/:id/claim") { request, context in
            await answer {
                let body = try SubscriptionJSON.object(try await collect(request))
                guard let worker = body["worker"] as? String, !worker.isEmpty, worker.utf8.count <= 200 else {
                    throw HTTPProblem.invalid("a claim names its 'worker' (1 to 200 bytes)")
                }
                let claimed = try await subscriptions.claim(try id(context), worker: worker)
                let streams = claimed.positions.map(Subscriptions.json)
                return SubscriptionJSON.response(
                    .ok,
                    [
                        "wake_id": claimed.subscription.state.wakeID ?? "", "generation": claimed.subscription.state.generation,
                        "token": claimed.token, "streams": streams, "lease_ttl_ms": claimed.subscription.config.leaseTTLMillis,
                    ])
            }
        }
        group.post("subscriptions/:id/ack") { request, context in
            await answer { try await acknowledge(request, context, kind: .pullWake) }
        }
        group.post("subscriptions/:id/callback") { request, context in
            await answer { try await acknowledge(request, context, kind: .webhook) }
        }
        group.post("subscriptions/:id/release") { request, context in
            await answer {
                try await subscriptions.release(try id(context), try await wakeRequest(request))
                return Response(status: .noContent)
            }
        }
        // Anything else under the prefix is the protocol's, never a stream.
        for method in [HTTPRequest.Method.get, .head, .put, .post, .delete] {
            group.on("**", method: method) { request, _ in
                HTTPProblem(.notFound, .notFound, "'\(request.uri.path)' is not part of the subscription API").response
            }
        }
    }

    private func put(_ id: String, _ request: Request) async throws(HTTPProblem) -> Response {
        let config = try SubscriptionConfig.parse(try SubscriptionJSON.object(try await collect(request)), webhookTargets: webhookTargets)
        let (subscription, created) = try await subscriptions.put(id, config)
        return SubscriptionJSON.response(created ? .created : .ok, body: await subscriptions.body(of: subscription))
    }

    private func acknowledge<Context: RequestContext>(
        _ request: Request, _ context: Context, kind: SubscriptionConfig.Kind
    ) async throws(HTTPProblem) -> Response {
        let nextWake = try await subscriptions.acknowledge(try id(context), try await wakeRequest(request), kind: kind)
        return SubscriptionJSON.response(.ok, ["ok": true, "next_wake": nextWake])
    }

    /// A worker's request for its wake: its token, wake id, generation, acks and `done`.
    private func wakeRequest(_ request: Request) async throws(HTTPProblem) -> Subscriptions.WakeRequest {
        guard let token = RequestHeaders(fields: request.headers).bearerToken else {
            throw HTTPProblem(.unauthorized, .tokenInvalid, "this needs Authorization: Bearer <the wake's token>")
        }
        let body = try SubscriptionJSON.object(try await collect(request))
        var acks: [(stream: String, offset: String)] = []
        if let list = body["acks"] {
            guard let items = list as? [[String: Any]] else { throw .invalid("'acks' is an array of {\"stream\": …, \"offset\": …}") }
            for item in items {
                guard let stream = (item["stream"] ?? item["path"]) as? String, let offset = item["offset"] as? String else {
                    throw .invalid("each ack names its 'stream' and its 'offset'")
                }
                acks.append((stream, offset))
            }
        }
        return Subscriptions.WakeRequest(
            token: token, wakeID: body["wake_id"] as? String,
            generation: (body["generation"] as? NSNumber)?.intValue, acks: acks, done: body["done"] as? Bool == true)
    }

    private func id<Context: RequestContext>(_ context: Context) throws(HTTPProblem) -> String {
        guard let id = context.parameters.get("id"), !id.isEmpty, id.utf8.count <= 200,
            id.unicodeScalars.allSatisfy({ CharacterSet.alphanumerics.contains($0) && $0.isASCII || "._-:".unicodeScalars.contains($0) })
        else { throw .invalid("a subscription id is 1 to 200 letters, digits, '.', '_', '-' or ':'") }
        return id
    }

    private func collect(_ request: Request) async throws(HTTPProblem) -> Data {
        var request = request
        do {
            return Data(try await request.collectBody(upTo: 1 << 20).readableBytesView)
        } catch {
            throw HTTPProblem.tooLarge("a subscription request's body is at most 1 MiB")
        }
    }

    /// Runs a handler; a refusal becomes its JSON answer.
    private func answer(_ body: () async throws -> Response) async -> Response {
        do {
            return try await body()
        } catch let problem as HTTPProblem {
            return problem.response
        } catch {
            return HTTPProblem.internal("\(error)").response
        }
    }
}

/// The stream root without its trailing slash.
enum StreamEndpointPrefix {
    static var trimmed: String { String(StreamEndpoint.prefix.dropLast()) }
}
