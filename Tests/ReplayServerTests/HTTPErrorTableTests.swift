import Foundation
import ReplayTesting
import Testing

/// Every refusal of the HTTP door has one shape, `{"error": {"code": …, "message": …}}`,
/// with its code from the one table, and the headers its meaning carries: over real HTTP,
/// against the real daemon.
@Suite("replayd: the HTTP door's errors", .timeLimit(.minutes(3)))
struct HTTPErrorTableTests {
    struct Refusal {
        let status: Int
        let code: String
        let headers: [String: String]
    }

    /// The status, the code and the headers of an answer that must be a refusal.
    static func refusal(_ response: HTTPTestClient.Response, _ what: String) throws -> Refusal {
        let object = (try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any]
        let error = try #require(object?["error"] as? [String: Any], "\(what): \(response.text)")
        let message = error["message"] as? String ?? ""
        #expect(!message.isEmpty, "\(what) has no message")
        let headers = ["Producer-Expected-Seq", "Producer-Received-Seq", "Producer-Epoch", "Stream-Closed", "Retry-After", "WWW-Authenticate"]
        return Refusal(
            status: response.status, code: error["code"] as? String ?? "(none)",
            headers: Dictionary(uniqueKeysWithValues: headers.compactMap { name in response[name].map { (name, $0) } }))
    }

    @Test func everyRefusalHasItsCodeAndItsHeaders() async throws {
        try await withDoor(arguments: ["--max-payload", "1024"]) { http in
            let text = [("Content-Type", "text/plain")]
            _ = try await http.request("PUT", "/v1/stream/orders", headers: text)
            func producer(_ epoch: Int, _ seq: Int) -> [(String, String)] {
                text + [("Producer-Id", "p"), ("Producer-Epoch", String(epoch)), ("Producer-Seq", String(seq))]
            }
            #expect(try await http.request("POST", "/v1/stream/orders", headers: producer(0, 0), body: "a").status == 200)
            let cases: [(String, HTTPTestClient.Response, Int, String)] = [
                ("a bad name", try await http.request("PUT", "/v1/stream/bad//name", headers: text), 400, "INVALID_NAME"),
                ("a name that is not UTF-8", try await http.request("PUT", "/v1/stream/a%FFb", headers: text), 400, "INVALID_NAME"),
                // The one rule of a name in a path, on every route that takes one.
                ("a POST's name that is not UTF-8", try await http.request("POST", "/v1/stream/a%FFb", headers: text, body: "x"), 400, "INVALID_NAME"),
                ("a GET's name that is not UTF-8", try await http.request("GET", "/v1/stream/a%FFb"), 400, "INVALID_NAME"),
                ("a tail's name that is not UTF-8", try await http.request("GET", "/v1/tail/a%FFb"), 400, "INVALID_NAME"),
                ("a derived stream's bad name", try await http.request("PUT", "/v1/derived/bad//name", body: "{}"), 400, "INVALID_NAME"),
                ("an unknown stream", try await http.request("GET", "/v1/stream/missing"), 404, "UNKNOWN_STREAM"),
                ("no such route", try await http.request("GET", "/v2/nothing"), 404, "NOT_FOUND"),
                ("no such subscription route", try await http.request("PUT", "/v1/stream/__ds/foo"), 404, "NOT_FOUND"),
                ("a bad header", try await http.request("PUT", "/v1/stream/t", headers: [("Stream-TTL", "soon")]), 400, "INVALID_REQUEST"),
                (
                    "another content type", try await http.request("POST", "/v1/stream/orders", headers: [("Content-Type", "application/json")], body: "1"),
                    409, "CONTENT_TYPE_MISMATCH"
                ),
                (
                    "over --max-payload", try await http.request("POST", "/v1/stream/orders", headers: text, body: String(repeating: "x", count: 2048)), 413,
                    "PAYLOAD_TOO_LARGE"
                ),
                ("a producer's gap", try await http.request("POST", "/v1/stream/orders", headers: producer(0, 5), body: "b"), 409, "PSEQ_GAP"),
                ("a new epoch above 0", try await http.request("POST", "/v1/stream/orders", headers: producer(1, 3), body: "b"), 400, "PSEQ_GAP"),
            ]
            for (what, response, status, code) in cases {
                let refusal = try Self.refusal(response, what)
                #expect(refusal.status == status, "\(what): \(response.text)")
                #expect(refusal.code == code, "\(what): \(response.text)")
            }
            // The headers each meaning carries, from the same table.
            let gap = try Self.refusal(cases[12].1, "gap")
            #expect(gap.headers["Producer-Expected-Seq"] == "1")
            #expect(gap.headers["Producer-Received-Seq"] == "5")
            #expect(try Self.refusal(cases[13].1, "new epoch").headers["Producer-Expected-Seq"] == nil)
            #expect(try await http.request("POST", "/v1/stream/orders", headers: producer(2, 0), body: "c").status == 200)
            let stale = try Self.refusal(try await http.request("POST", "/v1/stream/orders", headers: producer(1, 0), body: "d"), "a stale epoch")
            #expect(stale.status == 403 && stale.code == "STALE_EPOCH" && stale.headers["Producer-Epoch"] == "2")
            #expect(try await http.request("POST", "/v1/stream/orders", headers: text + [("Stream-Closed", "true")]).status == 204)
            let closed = try Self.refusal(try await http.request("POST", "/v1/stream/orders", headers: text, body: "e"), "a closed stream")
            #expect(closed.status == 409 && closed.code == "TERMINATED" && closed.headers["Stream-Closed"] == "true")
        }
    }

    @Test func refusalsOfTokensAndRatesHaveCodesToo() async throws {
        try await withDoor(arguments: ["--http-token", "secret", "--rate-limit-requests", "3/h"]) { http in
            let unauthorized = try Self.refusal(try await http.request("PUT", "/v1/stream/x", headers: [("Content-Type", "text/plain")]), "no token")
            #expect(unauthorized.status == 401 && unauthorized.code == "UNAUTHORIZED")
            #expect(unauthorized.headers["WWW-Authenticate"] == "Bearer realm=\"replay\"")
            // The token's scheme is read in one place, in any case (RFC 7235), on both paths
            // of a POST: the router's for a PUT, the event loop's for a plain POST.
            let lowercase = [("Content-Type", "text/plain"), ("Authorization", "bearer secret")]
            #expect(try await http.request("PUT", "/v1/stream/x", headers: lowercase).status == 201)
            #expect(try await http.request("POST", "/v1/stream/x", headers: lowercase, body: "a").status == 204)
            var limited: HTTPTestClient.Response?
            for _ in 0..<10 {
                let answer = try await http.request("GET", "/v1/stream/x", headers: [("Authorization", "Bearer secret")])
                if answer.status == 429 {
                    limited = answer
                    break
                }
            }
            let rate = try Self.refusal(try #require(limited), "over the rate")
            #expect(rate.code == "RATE_LIMITED" && rate.headers["Retry-After"] != nil)
        }
    }
}
