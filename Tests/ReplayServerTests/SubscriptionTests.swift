import Crypto
import Foundation
import ReplayTesting
import Testing

/// Durable Streams subscriptions over real HTTP against the real daemon: pull-wake workers
/// racing for a wake and taking over a dead one's lease, webhook deliveries signed with the
/// published key and retried on a schedule that survives a restart, fencing, and the
/// requests refused. (The conformance suite's own subscription tests run beside these: see
/// docs/HTTP.md.)
@Suite("replayd: Durable Streams subscriptions", .timeLimit(.minutes(5)))
struct SubscriptionTests {
    static let root = "/v1/stream/__ds/subscriptions/"
    static let json = [("Content-Type", "application/json")]

    static func object(_ response: HTTPTestClient.Response) -> [String: Any] {
        ((try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any]) ?? [:]
    }

    static func errorCode(_ response: HTTPTestClient.Response) -> String? {
        (object(response)["error"] as? [String: Any])?["code"] as? String
    }

    static func body(_ object: [String: Any]) -> String {
        String(decoding: try! JSONSerialization.data(withJSONObject: object), as: UTF8.self)
    }

    static func put(_ http: some HTTPRequester, _ id: String, _ config: [String: Any]) async throws -> HTTPTestClient.Response {
        try await http.request("PUT", root + id, headers: json, body: body(config))
    }

    /// The acknowledged offset of each linked stream, as GET reports it.
    static func acked(_ http: some HTTPRequester, _ id: String) async throws -> [String: String] {
        let streams = object(try await http.request("GET", root + id))["streams"] as? [[String: Any]] ?? []
        return Dictionary(uniqueKeysWithValues: streams.map { ($0["path"] as! String, $0["acked_offset"] as! String) })
    }

    static func offset(_ sequence: Int) -> String {
        String(format: "%016d_%016d", sequence, 0)
    }

    /// A wake stream, a pull-wake subscription over `jobs/*`, and a first job in `jobs/<id>`.
    static func pullWake(_ http: some HTTPRequester, _ id: String, leaseMillis: Int = 1000) async throws {
        #expect(try await http.request("PUT", "/v1/stream/wake/\(id)", headers: json, body: "[]").status == 201)
        let created = try await put(http, id, ["type": "pull-wake", "pattern": "jobs/*", "wake_stream": "wake/\(id)", "lease_ttl_ms": leaseMillis])
        #expect(created.status == 201)
        #expect(try await http.request("PUT", "/v1/stream/jobs/\(id)", headers: json, body: #"{"job":1}"#).status == 201)
        try await eventually("a wake event in wake/\(id)") {
            try await http.request("GET", "/v1/stream/wake/\(id)?offset=-1").text.contains(#""subscription_id":"\#(id)""#)
        }
    }

    /// replayd with its HTTP door in `directory` (again, for a restart), a client of the door,
    /// and the door's address (the callback URLs of that daemon's deliveries carry it).
    static func startWithHTTP(in directory: String, arguments: [String] = []) async throws -> (TestDaemon, HTTPTestClient, address: String) {
        let daemon = try await TestDaemon.start(in: directory, arguments: ["--http", "127.0.0.1:0"] + arguments)
        let address = try await daemon.httpAddress()
        return (daemon, try HTTPTestClient(address: address), address)
    }

    /// A webhook subscription `id` to the stream `tasks`, and a first event in it.
    static func webhookOnTasks(_ http: some HTTPRequester, _ id: String, _ receiver: WebhookReceiver) async throws {
        _ = try await put(http, id, ["type": "webhook", "streams": ["tasks"], "webhook": ["url": receiver.url]])
        _ = try await http.request("PUT", "/v1/stream/tasks", headers: json, body: #"{"n":1}"#)
    }

    static func claim(_ http: some HTTPRequester, _ id: String, as worker: String) async throws -> HTTPTestClient.Response {
        try await http.request("POST", root + id + "/claim", headers: json, body: body(["worker": worker]))
    }

    static func ack(
        _ http: some HTTPRequester, _ id: String, _ claimed: [String: Any], acks: [[String: Any]], done: Bool, action: String = "ack"
    ) async throws -> HTTPTestClient.Response {
        try await http.request(
            "POST", root + id + "/" + action, headers: json + [("Authorization", "Bearer \(claimed["token"] as? String ?? "")")],
            body: body(["wake_id": claimed["wake_id"] ?? "", "generation": claimed["generation"] ?? 0, "acks": acks, "done": done]))
    }

    @Test func twoPullWakeWorkersRaceAndExactlyOneClaims() async throws {
        try await withHTTP { _, http in
            try await Self.pullWake(http, "race", leaseMillis: 600_000)
            async let first = Self.claim(http, "race", as: "w1")
            async let second = Self.claim(http, "race", as: "w2")
            let answers = try await [first, second]
            #expect(answers.map(\.status).sorted() == [200, 409])
            let winner = answers[0].status == 200 ? "w1" : "w2"
            let loser = try #require(answers.first { $0.status == 409 })
            #expect(Self.errorCode(loser) == "ALREADY_CLAIMED")
            #expect((Self.object(loser)["error"] as? [String: Any])?["current_holder"] as? String == winner)
            let claimed = Self.object(try #require(answers.first { $0.status == 200 }))
            let streams = try #require(claimed["streams"] as? [[String: Any]])
            #expect(streams.first?["path"] as? String == "jobs/race")
            #expect(streams.first?["tail_offset"] as? String == Self.offset(1))
            #expect(streams.first?["has_pending"] as? Bool == true)
        }
    }

    @Test func aWorkerThatDiesLosesItsLeaseToAnotherAndItsLateAckIsFenced() async throws {
        try await withHTTP { daemon, http in
            try await Self.pullWake(http, "takeover")
            // w1 claims and is never heard from again (killed): its lease of 1 s runs out.
            let dead = Self.object(try await Self.claim(http, "takeover", as: "w1"))
            var taken: HTTPTestClient.Response?
            try await eventually("w2 takes the wake once w1's lease ran out") {
                taken = try await Self.claim(http, "takeover", as: "w2")
                return taken?.status == 200
            }
            let live = Self.object(try #require(taken))
            #expect((live["generation"] as? Int ?? 0) > (dead["generation"] as? Int ?? 0))

            // w1 comes back: its ack is fenced, and the position does not move.
            let late = try await Self.ack(http, "takeover", dead, acks: [["stream": "jobs/takeover", "offset": Self.offset(1)]], done: true)
            #expect(late.status == 409)
            #expect(Self.errorCode(late) == "FENCED")
            let metrics = try await http.request("GET", "/metrics").text
            #expect(metrics.contains("replay_ds_lease_expiries_total 1") || metrics.contains("replay_ds_lease_expiries_total 2"))
            #expect(metrics.contains("replay_ds_claims_total 2") || metrics.contains("replay_ds_claims_total 3"))
            #expect(metrics.contains("replay_ds_fenced_total 1"))
            #expect(try await Self.acked(http, "takeover")["jobs/takeover"] == Self.offset(0))

            // w2 finishes: the position moves once, and nothing is left to wake for. (On a
            // loaded machine w2's 1-second lease may run out first: it is then fenced too,
            // and claims again, as a worker would.)
            try await Self.finish(http, "takeover", as: "w2", first: live, acks: [["stream": "jobs/takeover", "offset": Self.offset(1)]])
            #expect(try await Self.acked(http, "takeover")["jobs/takeover"] == Self.offset(1))
            #expect(Self.errorCode(try await Self.claim(http, "takeover", as: "w3")) == "NO_PENDING_WORK")

            // The socket sees the same state: the subscription, its wake and its positions.
            let listed = try await runProgram(
                try builtExecutable("replayctl"), ["subscriptions", "--streams", "--socket", daemon.socketPath])
            #expect(listed.status == 0, "\(listed.stderr)")
            let lines = listed.stdout.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init) }
            #expect(lines.first?.first == "SUBSCRIPTION")
            #expect(lines.contains { $0.first == "takeover" && $0.contains("pull-wake") && $0.contains("jobs/*") && $0.last == "0" }, "\(listed.stdout)")
            #expect(lines.contains { $0.first == "jobs/takeover" && $0.contains("glob") && $0.contains("1") }, "\(listed.stdout)")
            let json = try await runProgram(try builtExecutable("replayctl"), ["subscriptions", "--json", "--socket", daemon.socketPath])
            let described = try #require((try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])?.first)
            #expect(described["wake_stream"] as? String == "wake/takeover")
            #expect((described["streams"] as? [[String: Any]])?.first?["acked_seq"] as? Int == 1)
            let python = try await runProgram("/usr/bin/env", ["python3", toolScript("replay_client.py"), "--socket", daemon.socketPath, "subscriptions"])
            #expect(python.stdout.contains(#""id": "takeover""#), "\(python.stderr)")
            let consumers = try await runProgram(try builtExecutable("replayctl"), ["consumers", "jobs/takeover", "--socket", daemon.socketPath])
            #expect(consumers.stdout.contains("__ds/takeover"))

            // A second job, claimed and released: the next claim gets it again.
            _ = try await http.request("POST", "/v1/stream/jobs/takeover", headers: Self.json, body: #"{"job":2}"#)
            try await eventually("a claim released") {
                let again = try await Self.claim(http, "takeover", as: "w2")
                guard again.status == 200 else { return false }
                return try await Self.ack(http, "takeover", Self.object(again), acks: [], done: false, action: "release").status == 204
            }
            #expect(try await Self.claim(http, "takeover", as: "w3").status == 200)
        }
    }

    /// Acknowledges with `done`, claiming again for as long as the lease runs out first.
    static func finish(
        _ http: HTTPTestClient, _ id: String, as worker: String, first claimed: [String: Any], acks: [[String: Any]]
    ) async throws {
        var claimed = claimed
        // Up to 120 s: among the whole suite on two cores, one full run of eight took
        // longer than 30 s of claims and fenced acks against the 1-second lease (the test
        // alone takes 1.7 s).
        try await eventually(within: 120, "\(worker) finishes its wake") {
            let answer = try await ack(http, id, claimed, acks: acks, done: true)
            if answer.status == 200 {
                #expect(object(answer)["next_wake"] as? Bool == false)
                return true
            }
            #expect(errorCode(answer) == "FENCED", "\(answer.text)")
            let again = try await claim(http, id, as: worker)
            if again.status == 200 { claimed = object(again) }
            return false
        }
    }

    /// Verifies a delivery's `Webhook-Signature` against the JWK set the daemon publishes.
    static func verify(_ delivery: WebhookReceiver.Delivery, keys: [[String: Any]]) throws -> Bool {
        let header = try #require(delivery.headers["webhook-signature"])
        let fields = Dictionary(
            uniqueKeysWithValues: header.split(separator: ",").map { part in
                let pair = part.split(separator: "=", maxSplits: 1)
                return (String(pair[0]), String(pair.count > 1 ? pair[1] : ""))
            })
        let key = try #require(keys.first { $0["kid"] as? String == fields["kid"] })
        #expect(key["kty"] as? String == "OKP")
        #expect(key["crv"] as? String == "Ed25519")
        let publicKey = try Curve25519.Signing.PublicKey(rawRepresentation: try #require(base64url(key["x"] as? String ?? "")))
        var signed = Data("\(fields["t"] ?? "").".utf8)
        signed.append(delivery.body)
        return publicKey.isValidSignature(try #require(base64url(fields["ed25519"] ?? "")), for: signed)
    }

    static func base64url(_ text: String) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }

    @Test func webhookDeliveriesAreSignedWithThePublishedKeyAndCallbacksFinishThem() async throws {
        try await Prerequisite.sqlite3.require()
        let receiver = try await WebhookReceiver()
        defer { Task { await receiver.close() } }
        try await withHTTP { daemon, http in
            let created = Self.object(try await Self.put(http, "hooks", ["type": "webhook", "pattern": "orders/*", "webhook": ["url": receiver.url]]))
            let signing = try #require((created["webhook"] as? [String: Any])?["signing"] as? [String: Any])
            let jwksURL = try #require(signing["jwks_url"] as? String)
            #expect(jwksURL == "http://\(http.host):\(http.port)/v1/stream/__ds/jwks.json")
            let jwks = try await http.request("GET", "/v1/stream/__ds/jwks.json")
            #expect(jwks["Content-Type"] == "application/jwk-set+json")
            let keys = try #require(Self.object(jwks)["keys"] as? [[String: Any]])
            #expect(keys.contains { $0["kid"] as? String == signing["kid"] as? String })

            _ = try await http.request("PUT", "/v1/stream/orders/1", headers: Self.json, body: #"{"n":1}"#)
            let first = try #require(try await receiver.waitFor(1).first)
            #expect(try Self.verify(first, keys: keys))
            let wake = first.json
            #expect(wake["subscription_id"] as? String == "hooks")
            #expect(wake["callback_url"] as? String == "http://\(http.host):\(http.port)/v1/stream/__ds/subscriptions/hooks/callback")
            // A tampered body does not verify.
            let tampered = WebhookReceiver.Delivery(body: first.body + Data(" ".utf8), headers: first.headers, received: .now)
            #expect(try Self.verify(tampered, keys: keys) == false)

            let claimed: [String: Any] = ["token": wake["callback_token"] ?? "", "wake_id": wake["wake_id"] ?? "", "generation": wake["generation"] ?? 0]
            let callback = try await Self.ack(http, "hooks", claimed, acks: [["stream": "orders/1", "offset": Self.offset(1)]], done: true, action: "callback")
            #expect(callback.status == 200)
            #expect(try await Self.acked(http, "hooks")["orders/1"] == Self.offset(1))

            // The next event wakes the next generation, signed the same way.
            _ = try await http.request("POST", "/v1/stream/orders/1", headers: Self.json, body: #"{"n":2}"#)
            let second = try #require(try await receiver.waitFor(2).last)
            #expect(try Self.verify(second, keys: keys))
            #expect(second.json["generation"] as? Int == (wake["generation"] as? Int ?? 0) + 1)

            // Counted: two wakes, two deliveries, and their durations.
            let metrics = try await http.request("GET", "/metrics").text
            #expect(metrics.contains("replay_ds_wakes_total 2"))
            #expect(metrics.contains("replay_ds_webhook_attempts_total 2"))
            #expect(metrics.contains("replay_ds_webhook_duration_seconds_count 2"))
            #expect(metrics.contains("replay_ds_subscriptions 1"))

            // The subscription's row, and its position as a durable consumer, read with sqlite3.
            let rows = try await runProgram(
                "/usr/bin/sqlite3",
                [
                    daemon.databasePath,
                    "SELECT s.id, json_extract(s.state, '$.generation'), c.acked_seq FROM subscriptions s JOIN consumers c ON c.name = '__ds/' || s.id",
                ])
            #expect(rows.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "hooks|2|1", "\(rows.stderr)")
        }
    }

    @Test func aFailingReceiverGetsTheWakeAgainAfterABackoff() async throws {
        let receiver = try await WebhookReceiver(answers: [.init(status: 500), .init(status: 503), .init(body: #"{"done":true}"#)])
        defer { Task { await receiver.close() } }
        try await withHTTP { _, http in
            _ = try await Self.put(http, "flaky", ["type": "webhook", "streams": ["tasks"], "webhook": ["url": receiver.url]])
            _ = try await http.request("PUT", "/v1/stream/tasks", headers: Self.json, body: #"{"n":1}"#)
            let deliveries = try await receiver.waitFor(3)
            // The same wake each time, 1 s then 2 s apart (each ±20 %): never sooner.
            #expect(Set(deliveries.map { $0.json["wake_id"] as? String }).count == 1)
            #expect(deliveries[1].received - deliveries[0].received >= .milliseconds(800))
            #expect(deliveries[2].received - deliveries[1].received >= .milliseconds(1600))
            // The third said done: the snapshot is acknowledged, and the schedule is clear.
            try await eventually("the position moves to the snapshot's tail") {
                try await Self.acked(http, "flaky")["tasks"] == Self.offset(1)
            }
            let state = Self.object(try await http.request("GET", Self.root + "flaky"))
            #expect(state["status"] as? String == "active")
            #expect(state["retry"] == nil)
        }
    }

    @Test func aRestartKeepsTheRetrySchedule() async throws {
        let receiver = try await WebhookReceiver(answers: [.init(status: 500)])
        defer { Task { await receiver.close() } }
        try await withTemporaryDirectory { directory in
            var (daemon, http, _) = try await Self.startWithHTTP(in: directory)
            try await Self.webhookOnTasks(http, "kept", receiver)
            // At least two failures written; then the daemon stops.
            try await eventually("two failures are written") {
                let retry = Self.object(try await http.request("GET", Self.root + "kept"))["retry"] as? [String: Any]
                return (retry?["failures"] as? Int ?? 0) >= 2
            }
            let kid = try await http.request("GET", "/v1/stream/__ds/jwks.json").text
            #expect(await daemon.stop() == 0)
            let delivered = receiver.deliveries.count
            // The schedule is in the subscription's row.
            let row = try await runProgram(
                "/usr/bin/sqlite3",
                [daemon.databasePath, "SELECT json_extract(state, '$.retries'), json_extract(state, '$.next_attempt') FROM subscriptions WHERE id = 'kept'"])
            let fields = row.stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: "|").compactMap { Int($0) }
            #expect(fields.count == 2, "\(row.stdout) \(row.stderr)")
            let failures = fields.first ?? 0
            let due = fields.last ?? 0
            #expect(failures >= 2)

            receiver.answer(with: [.init()])
            let address: String
            (daemon, http, address) = try await Self.startWithHTTP(in: directory)
            #expect(try await http.request("GET", "/v1/stream/__ds/jwks.json").text == kid, "the signing key survives the restart")
            // The next attempt is the same wake, at its time (not at the restart, unless the
            // restart itself took longer than the wait). A request the old daemon sent as it
            // stopped may reach the receiver late, even after the restart: the restarted
            // daemon's are told apart by their callback URL, which has its new port.
            var next: WebhookReceiver.Delivery?
            try await eventually(within: 90, "a delivery from the restarted daemon") {
                next = receiver.deliveries.dropFirst(delivered).first { ($0.json["callback_url"] as? String)?.hasPrefix("http://\(address)/") == true }
                return next != nil
            }
            let deliveries = receiver.deliveries
            guard let next else { throw TestFailure("no delivery after the restart") }
            let receivedMillis = Int(Date().timeIntervalSince1970 * 1000) - Int((ContinuousClock.now - next.received) / .milliseconds(1))
            #expect(receivedMillis >= due - 50)
            #expect(next.json["wake_id"] as? String == deliveries[0].json["wake_id"] as? String)
            #expect(next.json["generation"] as? Int == 1)
            try await eventually("the delivery is written as accepted") {
                Self.object(try await http.request("GET", Self.root + "kept"))["status"] as? String == "active"
            }
            await daemon.stop()
        }
    }

    @Test func aDeliveryCutShortByAStopIsNotAFailureAndGoesOutAtTheNextStart() async throws {
        // The first delivery fails; the second hangs, and is in flight when the daemon stops.
        let receiver = try await WebhookReceiver(answers: [.init(status: 500), .withheld])
        defer { Task { await receiver.close() } }
        try await withTemporaryDirectory { directory in
            // A timeout no stall of the machine reaches: the withheld delivery must still be in
            // flight when the stop comes (with the default 10 s, a run that took 14 s from the
            // second delivery to the stop counted it as a failure).
            var (daemon, http, _) = try await Self.startWithHTTP(in: directory, arguments: ["--webhook-timeout", "600"])
            try await Self.webhookOnTasks(http, "cut", receiver)
            _ = try await receiver.waitFor(2)
            let stopped = Int(Date().timeIntervalSince1970 * 1000)
            #expect(await daemon.stop() == 0)
            // One failure, the receiver's; the cut delivery is due at once, not backed off.
            let row = try await runProgram(
                "/usr/bin/sqlite3",
                [daemon.databasePath, "SELECT json_extract(state, '$.retries'), json_extract(state, '$.next_attempt') FROM subscriptions WHERE id = 'cut'"])
            let fields = row.stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: "|").compactMap { Int($0) }
            #expect(fields.count == 2, "\(row.stdout) \(row.stderr)")
            #expect(fields.first == 1, "\(daemon.log)")
            #expect((fields.last ?? .max) <= stopped + 10_000, "due at the stop, not after a backoff or the watchdog: \(daemon.log)")

            receiver.answer(with: [.init(body: #"{"done":true}"#)])
            let address: String
            (daemon, http, address) = try await Self.startWithHTTP(in: directory)
            try await eventually("the restarted daemon delivers the same wake, and it is done") {
                try await Self.acked(http, "cut")["tasks"] == Self.offset(1)
            }
            let again = receiver.deliveries.filter { ($0.json["callback_url"] as? String)?.hasPrefix("http://\(address)/") == true }
            #expect(again.first?.json["wake_id"] as? String == receiver.deliveries[0].json["wake_id"] as? String)
            // The restarted daemon hears of commits for the subscriptions it loaded.
            _ = try await http.request("POST", "/v1/stream/tasks", headers: Self.json, body: #"{"n":2}"#)
            try await eventually("a commit after the restart wakes it again") {
                try await Self.acked(http, "cut")["tasks"] == Self.offset(2)
            }
            await daemon.stop()
        }
    }

    @Test func aRestartedDaemonWakesTheSubscriptionsItLoadedForNewWork() async throws {
        try await withTemporaryDirectory { directory in
            var (daemon, http, _) = try await Self.startWithHTTP(in: directory)
            #expect(try await http.request("PUT", "/v1/stream/wake/idle", headers: Self.json, body: "[]").status == 201)
            #expect(try await Self.put(http, "idle", ["type": "pull-wake", "pattern": "jobs/*", "wake_stream": "wake/idle"]).status == 201)
            #expect(await daemon.stop() == 0)
            // Nothing to do at the start: the first news of work is a commit.
            (daemon, http, _) = try await Self.startWithHTTP(in: directory)
            #expect(try await http.request("PUT", "/v1/stream/jobs/1", headers: Self.json, body: #"{"job":1}"#).status == 201)
            try await eventually("a wake event in wake/idle") {
                try await http.request("GET", "/v1/stream/wake/idle?offset=-1").text.contains(#""subscription_id":"idle""#)
            }
            await daemon.stop()
        }
    }

    @Test func unsafeWebhookTargetsAreRefusedAndNothingIsCreated() async throws {
        try await withDoor { http in
            for url in [
                "http://10.0.0.1/hook", "https://10.1.2.3/hook", "https://192.168.1.1/hook", "https://172.16.0.1/hook", "https://169.254.169.254/latest",
                "https://127.0.0.1/hook", "https://localhost/hook", "http://example.com/hook", "ftp://example.com/hook", "not a url",
            ] {
                let refused = try await Self.put(http, "unsafe", ["type": "webhook", "pattern": "a/*", "webhook": ["url": url]])
                #expect(refused.status == 400, "\(url)")
                #expect(Self.errorCode(refused) == "WEBHOOK_URL_REJECTED", "\(url): \(refused.text)")
            }
            #expect(try await http.request("GET", Self.root + "unsafe").status == 404)
            #expect(try await Self.put(http, "safe", ["type": "webhook", "pattern": "a/*", "webhook": ["url": "https://hooks.example/x"]]).status == 201)
        }
        // A trusted network may widen the rule.
        try await withDoor(arguments: ["--webhook-allow-private"]) { http in
            let inside = try await Self.put(http, "inside", ["type": "webhook", "pattern": "a/*", "webhook": ["url": "https://10.0.0.1/hook"]])
            #expect(inside.status == 201)
        }
    }

    @Test func badRequestsGetAClearErrorAndChangeNothing() async throws {
        try await withDoor { http in
            let refusals: [(String, String)] = [
                ("{not json", "must be a JSON object"),
                (Self.body(["type": "carrier-pigeon", "pattern": "a/*"]), "unknown type"),
                (Self.body(["type": "pull-wake", "pattern": "a/*", "wake_stream": "w", "lease_ttl_ms": 999]), "between 1000"),
                (Self.body(["type": "pull-wake", "pattern": "a/*", "wake_stream": "w", "lease_ttl_ms": 600_001]), "between 1000"),
                (Self.body(["type": "pull-wake", "wake_stream": "w"]), "neither was given"),
                (Self.body(["type": "pull-wake", "pattern": "a/*"]), "needs 'wake_stream'"),
                (Self.body(["type": "pull-wake", "pattern": "a/ord*", "wake_stream": "w"]), "whole segments"),
                (Self.body(["type": "webhook", "pattern": "a/*"]), "needs 'webhook'"),
            ]
            for (body, words) in refusals {
                let refused = try await http.request("PUT", Self.root + "bad", headers: Self.json, body: body)
                #expect(refused.status == 400, "\(body)")
                #expect(Self.errorCode(refused) == "INVALID_REQUEST")
                #expect(refused.text.contains(words), "\(refused.text)")
            }
            #expect(try await http.request("GET", Self.root + "bad").status == 404)

            // Re-declared differently: a conflict, and the first declaration stands.
            // (Leases long enough not to run out while the test runs on a loaded machine.)
            try await Self.pullWake(http, "one", leaseMillis: 600_000)
            let other = try await Self.put(http, "one", ["type": "pull-wake", "pattern": "jobs/*", "wake_stream": "wake/one", "lease_ttl_ms": 2000])
            #expect(other.status == 409)
            #expect(Self.errorCode(other) == "SUBSCRIPTION_ALREADY_EXISTS")
            #expect(Self.object(try await http.request("GET", Self.root + "one"))["lease_ttl_ms"] as? Int == 600_000)

            // A token for another subscription, or of an earlier generation, moves nothing.
            try await Self.pullWake(http, "two", leaseMillis: 600_000)
            let mine = Self.object(try await Self.claim(http, "one", as: "w"))
            let theirs = Self.object(try await Self.claim(http, "two", as: "w"))
            let crossed = try await Self.ack(
                http, "one", ["token": theirs["token"] ?? "", "wake_id": mine["wake_id"] ?? "", "generation": mine["generation"] ?? 0],
                acks: [["stream": "jobs/one", "offset": Self.offset(1)]], done: true)
            #expect(crossed.status == 401)
            #expect(Self.errorCode(crossed) == "TOKEN_INVALID")
            let forged = try await Self.ack(http, "one", ["token": "abc.def.ghi", "wake_id": mine["wake_id"] ?? "", "generation": 1], acks: [], done: true)
            #expect(forged.status == 401)
            let stale = try await Self.ack(
                http, "one", ["token": mine["token"] ?? "", "wake_id": mine["wake_id"] ?? "", "generation": (mine["generation"] as? Int ?? 0) - 1],
                acks: [["stream": "jobs/one", "offset": Self.offset(1)]], done: true)
            #expect(stale.status == 409)
            #expect(Self.errorCode(stale) == "FENCED")
            let beyond = try await Self.ack(http, "one", mine, acks: [["stream": "jobs/one", "offset": Self.offset(9)]], done: true)
            #expect(beyond.status == 409)
            #expect(Self.errorCode(beyond) == "INVALID_OFFSET")
            let unknown = try await Self.ack(http, "one", mine, acks: [["stream": "elsewhere", "offset": Self.offset(1)]], done: true)
            #expect(Self.errorCode(unknown) == "INVALID_OFFSET")
            #expect(try await Self.acked(http, "one")["jobs/one"] == Self.offset(0))
            #expect(Self.object(try await http.request("GET", Self.root + "one"))["holder"] as? String == "w", "the lease is still held")

            // Nothing under the reserved prefix is a stream.
            #expect(try await http.request("PUT", "/v1/stream/__ds/mine", headers: Self.json).status == 404)
            #expect(try await http.request("DELETE", Self.root + "nobody").status == 404)
        }
    }
}

/// Two daemons on one PostgreSQL database share subscriptions: the rows, the key, and the
/// decisions, each written only if no other daemon's came first.
@Suite("replayd: Durable Streams subscriptions on two daemons sharing PostgreSQL", .timeLimit(.minutes(5)))
struct SharedSubscriptionTests {
    @Test func twoDaemonsMakeExactlyOneWakePerGenerationAndOneClaimWins() async throws {
        try await withTwoDaemons(arguments: ["--http", "127.0.0.1:0"]) { first, second in
            let daemons = [try HTTPTestClient(address: try await first.httpAddress()), try HTTPTestClient(address: try await second.httpAddress())]
            #expect(try await daemons[0].request("PUT", "/v1/stream/wake/shared", headers: SubscriptionTests.json, body: "[]").status == 201)
            for job in 0..<3 { _ = try await daemons[job % 2].request("PUT", "/v1/stream/jobs/\(job)", headers: SubscriptionTests.json) }
            let created = try await SubscriptionTests.put(daemons[0], "shared", ["type": "pull-wake", "pattern": "jobs/*", "wake_stream": "wake/shared"])
            #expect(created.status == 201)
            // The other daemon knows it at once (and so does its key).
            #expect(try await daemons[1].request("GET", SubscriptionTests.root + "shared").status == 200)
            let keys = try await daemons.asyncMap { try await $0.request("GET", "/v1/stream/__ds/jwks.json").text }
            #expect(keys[0] == keys[1])

            let rounds = 8
            for round in 1...rounds {
                // A job through either daemon: both hear of its commit, one makes the wake.
                let appended = daemons[round % 2]
                _ = try await appended.request("POST", "/v1/stream/jobs/\(round % 3)", headers: SubscriptionTests.json, body: #"{"round":\#(round)}"#)
                async let left = SubscriptionTests.claim(daemons[0], "shared", as: "left-\(round)")
                async let right = SubscriptionTests.claim(daemons[1], "shared", as: "right-\(round)")
                let answers = try await [left, right]
                #expect(answers.filter { $0.status == 200 }.count == 1, "round \(round): \(answers.map(\.text))")
                // The other is refused: held by the winner, or (when it came first to a daemon
                // that had not yet heard of the job's commit) nothing to do yet.
                #expect(answers.filter { ["ALREADY_CLAIMED", "NO_PENDING_WORK"].contains(SubscriptionTests.errorCode($0)) }.count == 1)
                let claimed = SubscriptionTests.object(try #require(answers.first { $0.status == 200 }))
                #expect(claimed["generation"] as? Int == round)
                // Finished through the daemon that stored the job (it knows the job's offset).
                let acks = (claimed["streams"] as? [[String: Any]] ?? []).filter { $0["has_pending"] as? Bool == true }.map {
                    ["stream": $0["path"] ?? "", "offset": $0["tail_offset"] ?? ""]
                }
                let done = try await SubscriptionTests.ack(appended, "shared", claimed, acks: acks, done: true)
                #expect(done.status == 200, "\(done.text)")
            }
            // One wake event per generation, from whichever daemon made it.
            let wakes = try await daemons[0].request("GET", "/v1/stream/wake/shared?offset=-1")
            let events = (try JSONSerialization.jsonObject(with: wakes.body) as? [[String: Any]]) ?? []
            #expect(events.compactMap { $0["generation"] as? Int } == Array(1...rounds), "\(wakes.text)")
        }
    }
}

extension Array {
    fileprivate func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}
