import Foundation
import ReplayTesting
import Testing

/// The HTTP door's part of trace context: a POST's `traceparent` header is stored with
/// each of its events, and reads say which events of a response are traced and how
/// (`Replay-Traceparent` on catch-up and long-poll, a `traceparents` event in SSE).
@Suite("Trace context over HTTP", .timeLimit(.minutes(3)))
struct TraceContextHTTPTests {
    static let json = [("Content-Type", "application/json")]
    static let traced = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    @Test func aPostsTraceparentIsStoredWithEachEventAndNamedOnReads() async throws {
        try await withDoor { http in
            #expect(try await http.request("PUT", "/v1/stream/orders", headers: Self.json).status == 201)
            #expect(try await http.request("POST", "/v1/stream/orders", headers: Self.json, body: "[1,2]").status == 204)
            let traced = Self.json + [("traceparent", Self.traced)]
            #expect(try await http.request("POST", "/v1/stream/orders", headers: traced, body: "[3,4]").status == 204)
            // One that does not parse is ignored, as the Trace Context specification says.
            let malformed = Self.json + [("traceparent", "00-nope")]
            #expect(try await http.request("POST", "/v1/stream/orders", headers: malformed, body: "5").status == 204)

            let read = try await http.request("GET", "/v1/stream/orders?offset=-1")
            #expect(read.text == "[1,2,3,4,5]")
            #expect(read.headers["Replay-Traceparent"].first == "\"\(Self.traced)\";index=2;seq=3, \"\(Self.traced)\";index=3;seq=4")

            let after = try await http.request("GET", "/v1/stream/orders?offset=0000000000000003_0000000000000000")
            #expect(after.text == "[4,5]")
            #expect(after.headers["Replay-Traceparent"].first == "\"\(Self.traced)\";index=0;seq=4", "indices count from the response's start")

            let untraced = try await http.request("GET", "/v1/stream/orders?offset=0000000000000004_0000000000000000")
            #expect(untraced.headers["Replay-Traceparent"].isEmpty)

            let polled = try await http.request("GET", "/v1/stream/orders?offset=0000000000000002_0000000000000000&live=long-poll")
            #expect(polled.text == "[3,4,5]")
            #expect(polled.headers["Replay-Traceparent"].first?.hasSuffix("index=1;seq=4") == true)
        }
    }

    @Test func aFilteredReadNamesOnlyTheTracedEventsItKept() async throws {
        try await withDoor { http in
            #expect(try await http.request("PUT", "/v1/stream/f", headers: Self.json).status == 201)
            let traced = Self.json + [("traceparent", Self.traced)]
            #expect(try await http.request("POST", "/v1/stream/f", headers: traced, body: "[1,2,3,4]").status == 204)
            // Events 1 and 3 give nothing; 2 gives one output, 4 two.
            let filter = "select(.%20%25%202%20%3D%3D%200)%20%7C%20range(.%20/%202)".replacingOccurrences(of: " ", with: "%20")
            let read = try await http.request("GET", "/v1/stream/f?offset=-1&filter=\(filter)")
            #expect(read.text == "[0,0,1]", "\(read.text)")
            #expect(read.headers["Replay-Traceparent"].first == "\"\(Self.traced)\";index=0;seq=2, \"\(Self.traced)\";index=1;seq=4")
        }
    }

    @Test func aResponseEndsBeforeItsSixtyFifthTracedEvent() async throws {
        try await withDoor { http in
            let traced = Self.json + [("traceparent", Self.traced)]
            #expect(try await http.request("PUT", "/v1/stream/many", headers: Self.json).status == 201)
            let body = "[" + (1...70).map(String.init).joined(separator: ",") + "]"
            #expect(try await http.request("POST", "/v1/stream/many", headers: traced, body: body).status == 204)

            let first = try await http.request("GET", "/v1/stream/many?offset=-1")
            #expect(first.text == "[" + (1...64).map(String.init).joined(separator: ",") + "]")
            #expect(first.headers["Replay-Traceparent"].first?.components(separatedBy: ", ").count == 64)
            #expect(first.headers["Stream-Next-Offset"].first == "0000000000000064_0000000000000000")
            #expect(first.headers["Stream-Up-To-Date"].isEmpty, "more follows")

            let rest = try await http.request("GET", "/v1/stream/many?offset=0000000000000064_0000000000000000")
            #expect(rest.text == "[65,66,67,68,69,70]")
            #expect(rest.headers["Replay-Traceparent"].first?.hasPrefix("\"\(Self.traced)\";index=0;seq=65") == true)
            #expect(rest.headers["Stream-Up-To-Date"].first == "true")
        }
    }

    @Test func sseSaysWhichEventsOfADataEventAreTraced() async throws {
        try await withDoor { http in
            #expect(try await http.request("PUT", "/v1/stream/live", headers: Self.json).status == 201)
            #expect(try await http.request("POST", "/v1/stream/live", headers: Self.json, body: "1").status == 204)
            let traced = Self.json + [("traceparent", Self.traced)]
            #expect(try await http.request("POST", "/v1/stream/live", headers: traced, body: "2").status == 204)
            // Closed, so that the SSE response ends after its events.
            #expect(try await http.request("POST", "/v1/stream/live", headers: [("Stream-Closed", "true")]).status == 204)
            let sse = try await http.request("GET", "/v1/stream/live?offset=-1&live=sse").text
            #expect(sse.contains("event: traceparents\ndata:[{\"index\":1,\"seq\":2,\"traceparent\":\"\(Self.traced)\"}]\n\n"), "\(sse)")
            let data = try #require(sse.range(of: "event: data")), traces = try #require(sse.range(of: "event: traceparents"))
            let control = try #require(sse.range(of: "event: control"))
            #expect(data.lowerBound < traces.lowerBound && traces.lowerBound < control.lowerBound, "after its data, before the control")
        }
    }
}
