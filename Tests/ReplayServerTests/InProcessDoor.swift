import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import NIOHTTP1
import ReplayTesting
import ServiceLifecycle

@testable import ReplayServer
@testable import replayd

/// The HTTP door in this test process, for tests of what the protocol answers, where the
/// daemon's process (its start, its memory, its descriptors, its signals) is not what is
/// tested: the daemon's services from the same flags as `replayd`'s, over a real store in
/// a temp folder, and the door served on a real port by HummingbirdTesting's live mode,
/// with the daemon's own pipeline (the inline POST, the connection budget, the deadlines).
/// Tests of the process itself start the real `replayd` (`withHTTP`).
///
/// What it saves is the daemon's start and stop per test, and a process the suite's two
/// cores share with the rest.
func withDoor<T: Sendable>(arguments: [String] = [], _ body: @escaping @Sendable (DoorClient) async throws -> T) async throws -> T {
    try await withTemporaryDirectory { directory in
        let flags = ["--socket", directory + "/replayd.sock", "--db", directory + "/replay.sqlite", "--http", "127.0.0.1:0"]
        // The request-head deadline as the test daemons have it (`TestDaemon.patientDoor`): the
        // client's one keep-alive connection waits on a test starved by the rest of the suite.
        let patient = arguments.contains("--http-header-timeout") ? [] : TestDaemon.patientDoor
        let command = try Replayd.parse(flags + patient + arguments)
        let configuration = try command.serverConfiguration(tokenKeys: try await command.tokenKeys())
        let logger = Logger(label: "replayd") { _ in SwiftLogNoOpLogHandler() }
        let server = try await ReplayServer(configuration: configuration, logger: logger)
        guard let door = server.services.lazy.compactMap({ $0 as? HTTPFrontDoor }).first else { throw TestFailure("no HTTP door") }
        // The other services run as in the daemon, stopped in its order once the test is done.
        let others = ServiceGroup(
            configuration: .init(services: server.services.filter { !($0 is HTTPFrontDoor) }.map { .init(service: $0) }, logger: logger))
        return try await withThrowingTaskGroup(of: Void.self) { services in
            services.addTask { try await others.run() }
            let result: Result<T, any Error>
            do {
                result = .success(try await door.withApplication { app in try await app.test(.live) { client in try await body(DoorClient(client)) } })
            } catch {
                result = .failure(error)
            }
            await others.triggerGracefulShutdown()
            try await services.waitForAll()
            return try result.get()
        }
    }
}

/// HummingbirdTesting's client, answering as `HTTPTestClient` does, so that a test reads
/// the same against the door in process and against the real daemon.
struct DoorClient: Sendable {
    let client: any TestClientProtocol

    init(_ client: any TestClientProtocol) {
        self.client = client
    }

    func request(_ method: String, _ path: String, headers: [(String, String)] = [], bytes: Data?) async throws -> HTTPTestClient.Response {
        var fields = HTTPFields()
        for (name, value) in headers {
            guard let name = HTTPField.Name(name) else { throw TestFailure("not a header name: \(name)") }
            fields.append(HTTPField(name: name, value: value))
        }
        let response = try await client.executeRequest(
            uri: path, method: HTTPRequest.Method(method) ?? .get, headers: fields, body: bytes.map { ByteBuffer(bytes: $0) })
        var answered = HTTPHeaders()
        for field in response.headers { answered.add(name: field.name.rawName, value: field.value) }
        return HTTPTestClient.Response(status: Int(response.status.code), headers: answered, body: Data(response.body.readableBytesView))
    }
}

/// What a test's helpers ask of an HTTP client, the real daemon's (`HTTPTestClient`) or
/// the door's in process (`DoorClient`).
protocol HTTPRequester: Sendable {
    func request(_ method: String, _ path: String, headers: [(String, String)], bytes: Data?) async throws -> HTTPTestClient.Response
}

extension HTTPRequester {
    func request(_ method: String, _ path: String, headers: [(String, String)] = [], body: String? = nil) async throws -> HTTPTestClient.Response {
        try await request(method, path, headers: headers, bytes: body.map { Data($0.utf8) })
    }
}

extension HTTPTestClient: HTTPRequester {}
extension DoorClient: HTTPRequester {}
