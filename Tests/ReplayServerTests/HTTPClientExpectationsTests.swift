import Foundation
import ReplayTesting
import Testing

/// What a Durable Streams client expects of the door beyond the conformance suite: the
/// origins a browser may call from, streams created by PUT keeping what they were given,
/// quiet SSE responses kept alive, and HEAD's ETag.
@Suite("replayd: the HTTP door as a Durable Streams client expects it", .timeLimit(.minutes(5)))
struct HTTPClientExpectationsTests {
    func preflight(_ http: some HTTPRequester, from origin: String) async throws -> HTTPTestClient.Response {
        try await http.request(
            "OPTIONS", "/v1/stream/s",
            headers: [("Origin", origin), ("Access-Control-Request-Method", "POST"), ("Access-Control-Request-Headers", "content-type")])
    }

    @Test func onlyTheOriginsGivenMayCallFromABrowser() async throws {
        // By default, none: a preflight is refused in words, and no response lets a page read it.
        try await withDoor { http in
            let refused = try await preflight(http, from: "https://app.example")
            #expect(refused.status == 403)
            #expect(refused.text.contains("--http-cors-origin"))
            #expect(refused["Access-Control-Allow-Origin"] == nil)
            let created = try await http.request("PUT", "/v1/stream/s", headers: [("Origin", "https://app.example")])
            #expect(created.status == 201, "a request without a preflight is served; the browser withholds the response")
            #expect(created["Access-Control-Allow-Origin"] == nil)
        }
        // A list: each origin given is echoed back (and caches told it varies); others refused.
        try await withDoor(arguments: ["--http-cors-origin", "https://app.example", "--http-cors-origin", "http://localhost:3000"]) { http in
            let allowed = try await preflight(http, from: "http://localhost:3000")
            #expect(allowed.status == 204)
            #expect(allowed["Access-Control-Allow-Origin"] == "http://localhost:3000")
            #expect(allowed["Vary"] == "Origin")
            #expect(allowed["Access-Control-Allow-Methods"]?.contains("POST") == true)
            #expect(try await preflight(http, from: "https://evil.example").status == 403)
            let created = try await http.request("PUT", "/v1/stream/s", headers: [("Origin", "https://app.example")])
            #expect(created["Access-Control-Allow-Origin"] == "https://app.example")
            #expect(created["Access-Control-Expose-Headers"]?.contains("Stream-Next-Offset") == true)
            let other = try await http.request("GET", "/v1/stream/s?offset=-1", headers: [("Origin", "https://evil.example")])
            #expect(other["Access-Control-Allow-Origin"] == nil)
        }
    }

    @Test func aStreamCreatedByPutKeepsEveryEventUnlessAskedToCapIt() async throws {
        // The socket's default capacity (3 here) is not an HTTP-created stream's.
        try await withDoor(arguments: ["--default-capacity", "3"]) { http in
            #expect(try await http.request("PUT", "/v1/stream/whole", headers: [("Content-Type", "application/json")]).status == 201)
            #expect(try await http.request("POST", "/v1/stream/whole", headers: [("Content-Type", "application/json")], body: "[1,2,3,4,5]").status == 204)
            #expect(try await http.request("GET", "/v1/stream/whole?offset=-1").text == "[1,2,3,4,5]")
            #expect(try await http.request("HEAD", "/v1/stream/whole")["Replay-Max-Events"] == nil)

            // A PUT may ask for a cap; a reader behind it is told, never moved on silently.
            let capped = try await http.request(
                "PUT", "/v1/stream/capped", headers: [("Content-Type", "application/json"), ("Replay-Max-Events", "2")])
            #expect(capped.status == 201)
            let first = try await http.request("POST", "/v1/stream/capped", headers: [("Content-Type", "application/json")], body: "[1]")
            let offset = try #require(first["Stream-Next-Offset"])
            _ = try await http.request("POST", "/v1/stream/capped", headers: [("Content-Type", "application/json")], body: "[2,3,4]")
            #expect(try await http.request("GET", "/v1/stream/capped?offset=-1").text == "[3,4]")
            #expect(try await http.request("HEAD", "/v1/stream/capped")["Replay-Max-Events"] == "2")
            let gone = try await http.request("GET", "/v1/stream/capped?offset=\(offset)")
            #expect(gone.status == 410)
            #expect(gone["Stream-Next-Offset"] != nil)

            // Declared again with another cap: a conflict; a cap that is not a count: refused.
            let other = try await http.request("PUT", "/v1/stream/capped", headers: [("Content-Type", "application/json"), ("Replay-Max-Events", "5")])
            #expect(other.status == 409)
            #expect(other.text.contains("keeps 2 events"))
            let bad = try await http.request("PUT", "/v1/stream/bad", headers: [("Replay-Max-Events", "-1")])
            #expect(bad.status == 400)
            #expect(try await http.request("HEAD", "/v1/stream/bad").status == 404, "nothing was created")
        }
        // The daemon may cap every stream a PUT creates.
        try await withDoor(arguments: ["--http-capacity", "7"]) { http in
            _ = try await http.request("PUT", "/v1/stream/s")
            #expect(try await http.request("HEAD", "/v1/stream/s")["Replay-Max-Events"] == "7")
        }
    }

    @Test func aQuietSSEResponseGetsControlEventsAndStaysOpenUntilItsDuration() async throws {
        try await withHTTP(arguments: ["--long-poll-timeout", "0.2"]) { _, http in
            _ = try await http.request("PUT", "/v1/stream/quiet", headers: [("Content-Type", "text/plain")])
            // Nothing is appended: only the keep-alive control events can make three.
            let kept = try await http.stream("/v1/stream/quiet?offset=-1&live=sse") { text in
                text.components(separatedBy: "event: control").count > 3
            }
            #expect(kept.status == 200)
            #expect(!kept.text.contains("event: data"))
        }
        // With --sse-duration the server ends the response, and the client reconnects.
        try await withHTTP(arguments: ["--long-poll-timeout", "0.2", "--sse-duration", "1"]) { _, http in
            _ = try await http.request("PUT", "/v1/stream/quiet", headers: [("Content-Type", "text/plain")])
            let ended = try await http.stream("/v1/stream/quiet?offset=-1&live=sse") { _ in false }
            #expect(ended.status == 200)
            #expect(ended.text.contains("\"upToDate\":true"))
        }
    }

    @Test func headCarriesTheETagOfAGetOfTheWholeStream() async throws {
        try await withDoor { http in
            let path = "/v1/stream/tagged"
            _ = try await http.request("PUT", path, headers: [("Content-Type", "text/plain")], body: "a")
            let head = try #require(try await http.request("HEAD", path)["ETag"])
            #expect(try await http.request("GET", path + "?offset=-1")["ETag"] == head)
            _ = try await http.request("POST", path, headers: [("Content-Type", "text/plain")], body: "b")
            let appended = try #require(try await http.request("HEAD", path)["ETag"])
            #expect(appended != head)
            #expect(try await http.request("GET", path + "?offset=-1")["ETag"] == appended)
            _ = try await http.request("POST", path, headers: [("Stream-Closed", "true")])
            let closed = try #require(try await http.request("HEAD", path)["ETag"])
            #expect(closed != appended, "closing changes the tag")
            #expect(try await http.request("GET", path + "?offset=-1")["ETag"] == closed)
        }
    }
}
