import Foundation
import ReplayClient
import ReplayModel
import ReplayProtocol
import ReplayTesting
import Testing

/// Derived streams and read-time filters over HTTP, and what INFO, the page's list and
/// /metrics show of a derivation.
@Suite("Derived streams over HTTP", .timeLimit(.minutes(3)))
struct DerivedStreamHTTPTests {
    static let json = [("Content-Type", "application/json")]

    @Test func aDerivedStreamIsDefinedOverHTTPAndReadAsAnyStream() async throws {
        try await withDoor { http in
            #expect(try await http.request("PUT", "/v1/stream/orders", headers: Self.json).status == 201)
            for id in 1...6 {
                #expect(try await http.request("POST", "/v1/stream/orders", headers: Self.json, body: #"{"id":\#(id),"amount":\#(id * 40)}"#).status == 204)
            }
            let definition = #"{"inputs": ["orders"], "program": "select(.amount > 100) | .id"}"#
            let defined = try await http.request("PUT", "/v1/derived/big", headers: Self.json, body: definition)
            #expect(defined.status == 200, "\(defined.text)")
            let described = try JSONDecoder().decode(DerivationDescription.self, from: defined.body)
            #expect(described.inputs == ["orders"])

            try await eventually("it computes") {
                let one = try await http.request("GET", "/v1/derived/big")
                return (try? JSONDecoder().decode(DerivationDescription.self, from: one.body))?.processed == 6
            }
            let read = try await http.request("GET", "/v1/stream/big?offset=-1")
            #expect(read.text == "[3,4,5,6]")
            let list = try JSONDecoder().decode([DerivationDescription].self, from: try await http.request("GET", "/v1/derived").body)
            #expect(list.map(\.stream) == ["big"])

            // Only its derivation appends to it.
            let appended = try await http.request("POST", "/v1/stream/big", headers: Self.json, body: "7")
            #expect(appended.status == 409, "\(appended.text)")
            // Refusals: the program, a conflict, a bad name.
            let refused = try await http.request("PUT", "/v1/derived/bad", headers: Self.json, body: #"{"inputs": ["orders"], "program": "now"}"#)
            #expect(refused.status == 400)
            #expect(refused.text.contains("uses 'now'"), "\(refused.text)")
            let changed = try await http.request("PUT", "/v1/derived/big", headers: Self.json, body: #"{"inputs": ["orders"], "program": ".id"}"#)
            #expect(changed.status == 409, "\(changed.text)")
            #expect(
                try await http.request("PUT", "/v1/derived/big?rebuild=true", headers: Self.json, body: #"{"inputs": ["orders"], "program": ".id"}"#).status
                    == 200)
            #expect(try await http.request("GET", "/v1/derived/nothing").status == 404)

            // The page's list shows the derivation with its stream.
            let streams = try JSONSerialization.jsonObject(with: try await http.request("GET", "/v1/streams").body) as? [[String: Any]]
            let big = streams?.first { $0["name"] as? String == "big" }
            #expect((big?["derivation"] as? [String: Any])?["inputs"] as? [String] == ["orders"])
        }
    }

    /// An HTTP reader counts as a subscriber: a catch-up GET connects a lazy derivation, which
    /// then keeps going; a refcount one runs while an SSE reader stays or a long poll waits.
    @Test func anHTTPReaderConnectsALazyDerivationAndKeepsARefcountOneRunning() async throws {
        try await withHTTP { _, http in
            #expect(try await http.request("PUT", "/v1/stream/orders", headers: Self.json).status == 201)
            for id in 1...3 { #expect(try await http.request("POST", "/v1/stream/orders", headers: Self.json, body: #"{"id":\#(id)}"#).status == 204) }
            for (name, connect) in [("lazy", "lazy"), ("shared", "refcount")] {
                let body = #"{"inputs": ["orders"], "program": ".id", "connect": "\#(connect)"}"#
                #expect(try await http.request("PUT", "/v1/derived/\(name)", headers: Self.json, body: body).status == 200)
            }
            @Sendable func described(_ name: String) async throws -> DerivationDescription? {
                try? JSONDecoder().decode(DerivationDescription.self, from: try await http.request("GET", "/v1/derived/\(name)").body)
            }
            #expect(try await described("lazy")?.status == .waiting)
            #expect(try await described("shared")?.status == .waiting)

            // A catch-up connects the lazy one for good.
            #expect(try await http.request("GET", "/v1/stream/lazy?offset=-1").status == 200)
            try await eventually("the lazy derivation computes") { try await described("lazy")?.processed == 3 }

            // The refcount one computes for an SSE reader, and waits again once it leaves.
            let sse = try await http.stream("/v1/stream/shared?offset=-1&live=sse") { $0.contains("data:3") }
            #expect(sse.text.contains("data:1,\ndata:2,"), "\(sse.text)")
            try await eventually("the refcount derivation waits again") { try await described("shared")?.status == .waiting }
            #expect(try await http.request("POST", "/v1/stream/orders", headers: Self.json, body: #"{"id":4}"#).status == 204)
            try await eventually("the lazy derivation keeps going") { try await described("lazy")?.processed == 4 }
            #expect(try await described("shared")?.processed == 3)

            // A long poll from its tail is served by the computation it starts.
            let tail = try await http.request("GET", "/v1/stream/shared?offset=now")
            let polled = try await http.request("GET", "/v1/stream/shared?offset=\(tail["Stream-Next-Offset"] ?? "")&live=long-poll")
            #expect(polled.status == 200)
            #expect(polled.text == "[4]")
        }
    }

    @Test func aFilterProjectsCatchUpLongPollAndSSEReadsUnderTheStreamsOffsets() async throws {
        try await withHTTP { _, http in
            #expect(try await http.request("PUT", "/v1/stream/prices", headers: Self.json).status == 201)
            for p in 1...4 {
                #expect(try await http.request("POST", "/v1/stream/prices", headers: Self.json, body: #"{"p":\#(p)}"#).status == 204)
            }
            let filter = "select%28.p%20%25%202%20%3D%3D%200%29%20%7C%20.p%20%2A%2010"  // select(.p % 2 == 0) | .p * 10
            let all = try await http.request("GET", "/v1/stream/prices?offset=-1&filter=\(filter)")
            #expect(all.status == 200)
            #expect(all.text == "[20,40]")
            // The offset is the stream's: the last event read, not the last output.
            #expect(all["Stream-Next-Offset"] == "0000000000000004_0000000000000000")

            // A long poll whose new event the filter drops answers with nothing, and moves on.
            async let polled = http.request("GET", "/v1/stream/prices?offset=0000000000000004_0000000000000000&live=long-poll&filter=\(filter)")
            try await Task.sleep(for: .milliseconds(100))
            #expect(try await http.request("POST", "/v1/stream/prices", headers: Self.json, body: #"{"p":5}"#).status == 204)
            let poll = try await polled
            #expect(poll.status == 204)
            #expect(poll["Stream-Next-Offset"] == "0000000000000005_0000000000000000")

            let sse = try await http.stream("/v1/stream/prices?offset=-1&live=sse&filter=\(filter)") { $0.contains("40") }
            #expect(sse.text.contains("20") && sse.text.contains("40"))
            #expect(!sse.text.contains(#""p""#))

            let refused = try await http.request("GET", "/v1/stream/prices?offset=-1&filter=env")
            #expect(refused.status == 400)
            #expect(refused.text.contains("uses 'env'"), "\(refused.text)")
        }
    }

    @Test func metricsAndInfoDescribeADerivation() async throws {
        try await withHTTP { daemon, http in
            let client = try await ReplayClient.connect(to: daemon.socketPath)
            _ = try await client.publish("in", contentsOf: [#"{"n":1}"#, "oops", #"{"n":3}"#].map { Data($0.utf8) })
            try await client.derive("out", DerivationSpec(inputs: ["in"], program: ".n", onError: .skip))
            try await eventually("it computes") { (try await client.derivations().first?.processed ?? 0) == 3 }
            let info = try await client.info("out")
            #expect(info.derivation?.errors == 1)
            #expect(info.derivation?.status == .running)
            #expect(try await client.info("in").derivation == nil)
            let metrics = try await http.request("GET", "/metrics").text
            #expect(metrics.contains(#"replay_derivation_processed_events{stream="out"} 3.0"#), "\(metrics)")
            #expect(metrics.contains(#"replay_derivation_errors_events{stream="out"} 1.0"#))
            #expect(metrics.contains(#"replay_derivation_lag_events{stream="out"} 0.0"#))
            #expect(metrics.contains(#"replay_derivation_status{stream="out",status="running"} 1.0"#))
            await client.close()
        }
    }
}
