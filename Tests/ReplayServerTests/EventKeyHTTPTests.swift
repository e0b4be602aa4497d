import Foundation
import ReplayTesting
import Testing

/// The HTTP door's part of event keys: a POST's `Replay-Key` header is stored with each of
/// its events, and a reader that asks (`?keys=on`) is told which events of a response have
/// which key (`Replay-Key` on catch-up and long-poll, a `keys` event in SSE).
@Suite("Event keys over HTTP", .timeLimit(.minutes(3)))
struct EventKeyHTTPTests {
    static let json = [("Content-Type", "application/json")]

    @Test func aPostsKeyIsStoredWithEachEventAndNamedForAReaderThatAsks() async throws {
        try await withDoor { http in
            #expect(try await http.request("PUT", "/v1/stream/prices", headers: Self.json).status == 201)
            #expect(try await http.request("POST", "/v1/stream/prices", headers: Self.json + [("Replay-Key", "AAPL")], body: "[1,2]").status == 204)
            #expect(try await http.request("POST", "/v1/stream/prices", headers: Self.json, body: "3").status == 204)
            #expect(try await http.request("POST", "/v1/stream/prices", headers: Self.json + [("Replay-Key", "a\"b")], body: "4").status == 204)

            let plain = try await http.request("GET", "/v1/stream/prices?offset=-1")
            #expect(plain.text == "[1,2,3,4]")
            #expect(plain.headers["Replay-Key"].isEmpty, "a reader that did not ask is not told")

            let keyed = try await http.request("GET", "/v1/stream/prices?offset=-1&keys=on")
            #expect(keyed.text == "[1,2,3,4]")
            #expect(keyed.headers["Replay-Key"].first == #""AAPL";index=0;seq=1, "AAPL";index=1;seq=2, "a\"b";index=3;seq=4"#)

            let polled = try await http.request("GET", "/v1/stream/prices?offset=0000000000000002_0000000000000000&live=long-poll&keys=on")
            #expect(polled.text == "[3,4]")
            #expect(polled.headers["Replay-Key"].first == #""a\"b";index=1;seq=4"#, "indices count from the response's start")

            let refused = try await http.request("GET", "/v1/stream/prices?offset=-1&keys=maybe")
            #expect(refused.status == 400)
        }
    }

    /// `?key=`: a key's current value over HTTP, as `GET` on the socket.
    @Test func aKeysCurrentValueIsOneGET() async throws {
        try await withDoor { http in
            #expect(try await http.request("PUT", "/v1/stream/kv", headers: Self.json).status == 201)
            for (key, body) in [("a", #"{"v":1}"#), ("b", #"{"v":2}"#), ("a", #"{"v":3}"#), ("b", "")] {
                #expect(try await http.request("POST", "/v1/stream/kv", headers: Self.json + [("Replay-Key", key)], body: body).status == 204)
            }
            let value = try await http.request("GET", "/v1/stream/kv?key=a")
            #expect(value.status == 200 && value.text == #"{"v":3}"# && value.headers["Replay-Seq"].first == "3")
            #expect(value.headers["Content-Type"].first == "application/json")
            let deleted = try await http.request("GET", "/v1/stream/kv?key=b")
            #expect(deleted.status == 404 && deleted.text.contains("UNKNOWN_KEY") && deleted.text.contains("tombstone"), "\(deleted.text)")
            #expect(try await http.request("GET", "/v1/stream/kv?key=nobody").status == 404)
            #expect(try await http.request("GET", "/v1/stream/kv?key=a&offset=-1").status == 400)
            #expect(try await http.request("GET", "/v1/stream/kv?key=%20").status == 400)
            #expect(try await http.request("GET", "/v1/stream/missing?key=a").status == 404)
        }
    }

    /// A key beyond printable ASCII is a Structured Field Display String (RFC 9651).
    @Test func aKeyBeyondASCIIIsADisplayString() async throws {
        try await withDoor { http in
            #expect(try await http.request("PUT", "/v1/stream/cafes", headers: Self.json).status == 201)
            #expect(try await http.request("POST", "/v1/stream/cafes", headers: Self.json + [("Replay-Key", "café")], body: "1").status == 204)
            let read = try await http.request("GET", "/v1/stream/cafes?offset=-1&keys=on")
            #expect(read.headers["Replay-Key"].first == #"%"caf%c3%a9";index=0;seq=1"#)
        }
    }

    @Test func aMalformedKeyIsRefusedAndNothingIsStored() async throws {
        try await withDoor { http in
            #expect(try await http.request("PUT", "/v1/stream/k", headers: Self.json).status == 201)
            let bad = String(repeating: "k", count: 257)
            let refused = try await http.request("POST", "/v1/stream/k", headers: Self.json + [("Replay-Key", bad)], body: "1")
            #expect(refused.status == 400 && refused.text.contains("Replay-Key"), "\(refused.text)")
            #expect(try await http.request("GET", "/v1/stream/k?offset=-1").text == "[]")
        }
    }

    /// Keyed events count against a response's 64 named events only for a reader that asks.
    @Test func aKeyedStreamsResponsesAreCutOnlyForAReaderThatAsks() async throws {
        try await withDoor { http in
            #expect(try await http.request("PUT", "/v1/stream/many", headers: Self.json).status == 201)
            let body = "[" + (1...70).map(String.init).joined(separator: ",") + "]"
            #expect(try await http.request("POST", "/v1/stream/many", headers: Self.json + [("Replay-Key", "k")], body: body).status == 204)
            #expect(try await http.request("GET", "/v1/stream/many?offset=-1").text == body)
            let keyed = try await http.request("GET", "/v1/stream/many?offset=-1&keys=on")
            #expect(keyed.text == "[" + (1...64).map(String.init).joined(separator: ",") + "]")
            #expect(keyed.headers["Replay-Key"].first?.components(separatedBy: ", ").count == 64)
        }
    }

    /// `offset=snapshot`: each key's current event, then the tail's offset, from which
    /// the reader goes on with what comes after, once.
    @Test func aSnapshotReadGivesEachKeysCurrentEventThenTheTailsOffset() async throws {
        try await withDoor { http in
            #expect(try await http.request("PUT", "/v1/stream/t", headers: Self.json).status == 201)
            for (key, body) in [("a", "1"), ("b", "2"), (nil, "3"), ("a", "4"), ("c", "5")] {
                let headers = Self.json + (key.map { [("Replay-Key", $0)] } ?? [])
                #expect(try await http.request("POST", "/v1/stream/t", headers: headers, body: body).status == 204)
            }
            // An empty POST with a key is the key's tombstone; a JSON stream reads it as null.
            #expect(try await http.request("PUT", "/v1/stream/gone", headers: Self.json).status == 201)
            for (key, body) in [("a", "1"), ("b", "2"), ("b", "")] {
                let headers = Self.json + [("Replay-Key", key)]
                #expect(try await http.request("POST", "/v1/stream/gone", headers: headers, body: body).status == 204, "\(key)=\(body)")
            }
            #expect(try await http.request("POST", "/v1/stream/gone", headers: Self.json, body: "").status == 400, "without a key, an empty POST is refused")
            #expect(try await http.request("GET", "/v1/stream/gone?offset=-1").text == "[1,2,null]")
            #expect(try await http.request("GET", "/v1/stream/gone?offset=snapshot").text == "[1]", "b's tombstone leaves b out")

            let snapshot = try await http.request("GET", "/v1/stream/t?offset=snapshot&keys=on")
            #expect(snapshot.status == 200 && snapshot.text == "[2,4,5]")
            #expect(snapshot.headers["Replay-Key"].first == #""b";index=0;seq=2, "a";index=1;seq=4, "c";index=2;seq=5"#)
            #expect(snapshot.headers["Stream-Next-Offset"].first == "0000000000000005_0000000000000000")
            #expect(snapshot.headers["Stream-Up-To-Date"].first == "true")
            #expect(try await http.request("POST", "/v1/stream/t", headers: Self.json + [("Replay-Key", "b")], body: "6").status == 204)
            let next = try await http.request("GET", "/v1/stream/t?offset=0000000000000005_0000000000000000")
            #expect(next.text == "[6]", "then what came after the snapshot's point, once")

            let polled = try await http.request("GET", "/v1/stream/t?offset=snapshot&live=long-poll")
            #expect(polled.status == 400 && polled.text.contains("catch-up"))
        }
    }

    /// A snapshot larger than one response goes on from an offset of its own, and ends at
    /// the point it was taken at, whatever was published since.
    @Test func aLargeSnapshotGoesOnFromItsOwnOffset() async throws {
        try await withDoor { http in
            #expect(try await http.request("PUT", "/v1/stream/big", headers: Self.json).status == 201)
            for index in 1...70 {
                let headers = Self.json + [("Replay-Key", "k\(index)")]
                #expect(try await http.request("POST", "/v1/stream/big", headers: headers, body: "\(index)").status == 204)
            }
            // Named keys cut a response at 64.
            let first = try await http.request("GET", "/v1/stream/big?offset=snapshot&keys=on")
            #expect(first.text == "[" + (1...64).map(String.init).joined(separator: ",") + "]")
            let onward = try #require(first.headers["Stream-Next-Offset"].first)
            #expect(onward == "snapshot-70-64" && first.headers["Stream-Up-To-Date"].isEmpty)
            #expect(try await http.request("POST", "/v1/stream/big", headers: Self.json + [("Replay-Key", "k1")], body: "71").status == 204)
            let rest = try await http.request("GET", "/v1/stream/big?offset=\(onward)&keys=on")
            #expect(rest.text == "[65,66,67,68,69,70]", "the snapshot at its point, not after the later event")
            #expect(rest.headers["Stream-Next-Offset"].first == "0000000000000070_0000000000000000")
            #expect(try await http.request("GET", "/v1/stream/big?offset=0000000000000070_0000000000000000").text == "[71]")
        }
    }

    /// Long keys cut a response before 64 of them: its headers stay within about 6 KB.
    @Test func longKeysCutAResponseBySize() async throws {
        try await withDoor { http in
            #expect(try await http.request("PUT", "/v1/stream/long", headers: Self.json).status == 201)
            let key = String(repeating: "k", count: 200)
            let body = "[" + (1...20).map(String.init).joined(separator: ",") + "]"
            #expect(try await http.request("POST", "/v1/stream/long", headers: Self.json + [("Replay-Key", key)], body: body).status == 204)
            let first = try await http.request("GET", "/v1/stream/long?offset=-1&keys=on")
            #expect(first.text == "[" + (1...9).map(String.init).joined(separator: ",") + "]")
            #expect((first.headers["Replay-Key"].first?.utf8.count ?? 0) < 6 << 10)
            let rest = try await http.request("GET", "/v1/stream/long?offset=0000000000000009_0000000000000000&keys=on")
            #expect(rest.text.hasPrefix("[10,"))
        }
    }

    @Test func sseSaysWhichEventsOfADataEventHaveWhichKey() async throws {
        try await withDoor { http in
            #expect(try await http.request("PUT", "/v1/stream/live", headers: Self.json).status == 201)
            #expect(try await http.request("POST", "/v1/stream/live", headers: Self.json, body: "1").status == 204)
            #expect(try await http.request("POST", "/v1/stream/live", headers: Self.json + [("Replay-Key", "k2")], body: "2").status == 204)
            #expect(try await http.request("POST", "/v1/stream/live", headers: [("Stream-Closed", "true")]).status == 204)
            let sse = try await http.request("GET", "/v1/stream/live?offset=-1&live=sse&keys=on").text
            #expect(sse.contains("event: keys\ndata:[{\"index\":1,\"seq\":2,\"key\":\"k2\"}]\n\n"), "\(sse)")
            let unasked = try await http.request("GET", "/v1/stream/live?offset=-1&live=sse").text
            #expect(!unasked.contains("event: keys"), "\(unasked)")
        }
    }
}
