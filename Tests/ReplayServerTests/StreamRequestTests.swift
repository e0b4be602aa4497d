import HTTPTypes
import Hummingbird
import NIOCore
import ReplayAuth
import Testing

@testable import ReplayServer

/// A request to a stream is read once, by one rule, and what a token is checked for is
/// what its route then does: `StreamPath`, `StreamRequest` and the access each family of
/// routes declares.
@Suite("StreamRequest and RequestAccess")
struct StreamRequestTests {
    @Test func aNameInAPathIsReadByOneRule() throws {
        #expect(try StreamPath.name("orders") == "orders")
        #expect(try StreamPath.name("orders/eu") == "orders/eu")
        // Decoded only when it holds an escape.
        #expect(try StreamPath.name("orders%2Feu") == "orders/eu")
        for bad in ["a%FFb", "", "bad//name", "a/../b", "sp%20ace", String(repeating: "x", count: 201)] {
            #expect(throws: HTTPProblem.self, "'\(bad)'") { try StreamPath.name(bad) }
            do {
                _ = try StreamPath.name(bad)
            } catch {
                #expect(error.status == .badRequest)
                #expect(error.code == HTTPProblem.Code(.invalidName))
            }
        }
    }

    @Test func theOperationFollowsTheMethodAndTheClose() throws {
        func operation(_ method: HTTPRequest.Method, _ fields: HTTPFields = [:]) throws -> StreamOperation {
            try StreamRequest(method: method, raw: "s", fields: fields).operation
        }
        #expect(try operation(.get) == .read)
        #expect(try operation(.head) == .read)
        #expect(try operation(.post) == .write)
        #expect(try operation(.post, [.streamClosed: "true"]) == .admin)
        #expect(try operation(.post, [.streamClosed: "TRUE"]) == .admin)
        // Any other value counts as absent (PROTOCOL.md §4.1).
        #expect(try operation(.post, [.streamClosed: "yes"]) == .write)
        #expect(try operation(.put) == .admin)
        #expect(try operation(.delete) == .admin)
        let request = try StreamRequest(method: .post, raw: "s", fields: [.streamSeq: "7"])
        #expect(request.name == "s")
        #expect(request.headers.writerSequence == "7")
    }

    @Test func onlyAStreamsPathIsAStreamRequest() throws {
        #expect(try StreamRequest.at("/v1/stream/a/b", method: .get, fields: [:])?.name == "a/b")
        // The subscription API shares the prefix; the stream list and the tail do not.
        #expect(try StreamRequest.at("/v1/stream/__ds/subscriptions/x", method: .put, fields: [:]) == nil)
        #expect(try StreamRequest.at("/v1/streams", method: .get, fields: [:]) == nil)
        #expect(try StreamRequest.at("/v1/tail/a", method: .get, fields: [:]) == nil)
        #expect(throws: HTTPProblem.self) { try StreamRequest.at("/v1/stream/a%FFb", method: .get, fields: [:]) }
    }

    /// Every family of routes answers for its own paths, in the router's order.
    @Test func eachRouteDeclaresWhatItNeedsOfAToken() {
        func access(_ method: HTTPRequest.Method, _ path: String, _ fields: HTTPFields = [:]) -> RequestAccess {
            let head = HTTPRequest(method: method, scheme: "http", authority: "x", path: path, headerFields: fields)
            return RequestAccess.of(Request(head: head, body: RequestBody(buffer: ByteBuffer())))
        }
        let table: [(HTTPRequest.Method, String, HTTPFields, RequestAccess)] = [
            (.get, "/", [:], .open),
            (.get, "/metrics", [:], .everywhere(.admin)),
            (.get, "/v1/streams", [:], .anyToken),
            (.get, "/v1/tail/orders", [:], .anyToken),
            (.get, "/v1/derived", [:], .anyToken),
            (.get, "/v1/derived/totals", [:], .anyToken),
            (.put, "/v1/derived/totals%2Feu", [:], .stream(.admin, "totals/eu")),
            (.get, "/v1/stream/__ds/jwks.json", [:], .open),
            (.post, "/v1/stream/__ds/subscriptions/s/ack", [:], .wakeToken),
            (.post, "/v1/stream/__ds/subscriptions/s/claim", [:], .everywhere(.claim)),
            (.put, "/v1/stream/__ds/subscriptions/s", [:], .everywhere(.admin)),
            (.get, "/v1/stream/orders", [:], .stream(.read, "orders")),
            (.head, "/v1/stream/orders", [:], .stream(.read, "orders")),
            (.post, "/v1/stream/orders", [:], .stream(.write, "orders")),
            (.post, "/v1/stream/orders", [.streamClosed: "true"], .stream(.admin, "orders")),
            (.put, "/v1/stream/a%2Fb", [:], .stream(.admin, "a/b")),
            (.delete, "/v1/stream/orders", [:], .stream(.admin, "orders")),
            // A path that names no stream: its route refuses it (400); nothing is read.
            (.get, "/v1/stream/a%FFb", [:], .anyToken),
            // No route: only a token for everything learns that it is not found.
            (.get, "/v2/anything", [:], .everywhere(.admin)),
        ]
        for (method, path, fields, expected) in table {
            #expect(access(method, path, fields) == expected, "\(method) \(path)")
        }
    }
}
