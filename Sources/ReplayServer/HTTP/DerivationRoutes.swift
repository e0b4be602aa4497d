import Foundation
import Hummingbird
import NIOCore
import ReplayAuth
import ReplayModel
import ReplayProtocol
import ReplayStore

/// Derived streams over HTTP, replay's extension beside the Durable Streams routes (the
/// protocol reserves `__ds` under the stream root for itself, so these live at their own
/// root):
///
/// - `PUT /v1/derived/<name>` with a definition (`DerivationSpec` as JSON) defines it, as
///   the socket's DERIVE: `?rebuild=true` recomputes a changed one, `?capacity=` sizes a
///   new one. 200 with the derivation as DERIVATIONS describes it; 400 for a refused
///   definition or program (its reason), 409 for a conflict.
/// - `GET /v1/derived` lists them; `GET /v1/derived/<name>` describes one.
///
/// The derived stream's events are read as any stream's, under `/v1/stream/<name>`.
struct DerivationRoutes: Sendable {
    static let root = "/v1/derived"
    let derivations: DerivationRegistry
    let defaultCapacity: Int?

    /// Reading derived streams is checked by their routes, per stream; defining one is
    /// administration of it (its inputs' reads are checked by the route).
    static func access(_ method: HTTPRequest.Method, _ path: String) -> RequestAccess? {
        guard path == root || path.hasPrefix(root + "/") else { return nil }
        guard method == .put, let name = try? StreamPath.name(path.dropFirst(root.count + 1)) else { return .anyToken }
        return .stream(.admin, name)
    }

    func add<Context: RequestContext>(to router: Router<Context>) {
        router.get(RouterPath(Self.root)) { _, _ in
            let principal = Principal.current
            return try Self.json(derivations.all.filter { principal.may(.read, on: $0.stream) })
        }
        let one = router.group(RouterPath(Self.root))
        one.get("**") { _, context in
            let name = try StreamPath.name(in: context)
            guard Principal.current.may(.read, on: name), let found = derivations.describe(name) else {
                throw HTTPProblem.unknownStream("no derived stream '\(name)'")
            }
            return try Self.json(found)
        }
        one.put("**") { request, context in try await define(try StreamPath.name(in: context), request) }
    }

    private func define(_ name: String, _ request: Request) async throws -> Response {
        var request = request
        let body: ByteBuffer
        do {
            body = try await request.collectBody(upTo: 1 << 20)
        } catch {
            throw HTTPProblem.tooLarge("a definition is at most 1 MiB")
        }
        let definition = String(buffer: body)
        // Administration of the derived stream is checked by the door; reading its inputs
        // is checked here, since a derived stream shows them to its readers.
        let principal = Principal.current
        for input in (try? DerivationSpec(json: definition))?.inputs ?? [] {
            let allowed =
                if StreamPattern.isPattern(input), case .success(let pattern) = StreamPattern.parse(input) {
                    principal.may(.read, onEvery: pattern)
                } else {
                    principal.may(.read, on: input)
                }
            if !allowed { throw HTTPProblem.forbidden("\(principal.name) may not read '\(input)'") }
        }
        let query = request.uri.queryParameters
        var options = DeriveOptions(rebuild: query["rebuild"] == "true")
        if let capacity = query["capacity"] {
            guard let parsed = CreateOptions.Capacity(String(capacity)) else {
                throw HTTPProblem.invalid("capacity takes a count, or unlimited")
            }
            options.capacity = parsed
        }
        let result = await withCheckedContinuation { continuation in
            derivations.define(name, definition: definition, options: options, defaultCapacity: defaultCapacity) { continuation.resume(returning: $0) }
        }
        switch result {
        case .success:
            return try Self.json(derivations.describe(name))
        case .failure(let error):
            throw HTTPProblem(error)
        }
    }

    private static func json(_ value: some Encodable) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var fields = HTTPFields()
        fields[.contentType] = "application/json"
        fields[.cacheControl] = "no-store"
        return Response(status: .ok, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: try encoder.encode(value))))
    }
}
