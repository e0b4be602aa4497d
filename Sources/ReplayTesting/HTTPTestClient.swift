import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import ReplayCore
import ReplaySync

/// A real HTTP/1.1 client for tests (NIO's own codec over a TCP connection), one
/// connection per request: enough to drive the daemon's HTTP front door the way a browser
/// or `curl` would, including reading an SSE response as it streams.
public struct HTTPTestClient: Sendable {
    public let host: String
    public let port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// `host:port`, as the daemon logs it.
    public init(address: String) throws {
        guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]) else {
            throw TestFailure("not a host:port: \(address)")
        }
        self.init(host: String(address[..<colon]), port: port)
    }

    public struct Response: Sendable {
        public let status: Int
        public let headers: HTTPHeaders
        public let body: Data

        public init(status: Int, headers: HTTPHeaders, body: Data) {
            self.status = status
            self.headers = headers
            self.body = body
        }

        public var text: String { String(decoding: body, as: UTF8.self) }

        public subscript(header: String) -> String? { headers.first(name: header) }
    }

    /// Sends one request and reads the whole response.
    public func request(_ method: String, _ path: String, headers: [(String, String)] = [], body: String? = nil) async throws -> Response {
        try await request(method, path, headers: headers, bytes: body.map { Data($0.utf8) })
    }

    public func request(_ method: String, _ path: String, headers: [(String, String)] = [], bytes: Data?) async throws -> Response {
        try await exchange(method, path, headers: headers, body: bytes.map { [$0] }, stopEarly: nil)
    }

    /// Sends the body in `chunks` with `Transfer-Encoding: chunked` (a body of unknown length).
    public func request(_ method: String, _ path: String, headers: [(String, String)] = [], chunks: [Data]) async throws -> Response {
        try await exchange(method, path, headers: headers + [("Transfer-Encoding", "chunked")], body: chunks, stopEarly: nil)
    }

    /// Sends a GET and reads the response's body as it streams until `enough` says so (or
    /// the server ends it); the connection is then closed, as a client that leaves.
    public func stream(_ path: String, headers: [(String, String)] = [], until enough: @escaping @Sendable (String) -> Bool) async throws -> Response {
        try await exchange("GET", path, headers: headers, body: nil) { _, text in enough(text) }
    }

    /// Sends a GET, reads the response's head, then stops reading (a client that stalls,
    /// its socket buffers filling) until `release` returns; returns the status.
    public func stalledRead(_ path: String, until release: @escaping @Sendable () async -> Void) async throws -> Int {
        let channel = try await connect()
        let status = Locked<Int?>(nil)
        do {
            try await channel.executeThenClose { inbound, outbound in
                var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: path)
                head.headers.add(name: "Host", value: "\(host):\(port)")
                try await outbound.write(contentsOf: [.head(head), .end(nil)])
                for try await part in inbound {
                    if case .head(let response) = part {
                        status.withLock { $0 = Int(response.status.code) }
                        await release()
                        return
                    }
                }
            }
        } catch {
            // Closing with unread data resets the connection: once the head came, that is
            // how a stalled client leaves, not a failure.
            if status.value == nil { throw error }
        }
        guard let code = status.value else { throw TestFailure("the server closed the connection before the response's head") }
        return code
    }

    private func connect() async throws -> NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart> {
        try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: host, port: port) { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHTTPClientHandlers()
                return try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(wrappingChannelSynchronously: channel)
            }
        }
    }

    private func exchange(
        _ method: String, _ path: String, headers: [(String, String)], body: [Data]?,
        stopEarly: (@Sendable (Int, String) -> Bool)?
    ) async throws -> Response {
        let channel = try await connect()
        return try await channel.executeThenClose { inbound, outbound in
            var head = HTTPRequestHead(version: .http1_1, method: HTTPMethod(rawValue: method), uri: path)
            head.headers.add(name: "Host", value: "\(host):\(port)")
            head.headers.add(name: "Connection", value: "close")
            for (name, value) in headers { head.headers.add(name: name, value: value) }
            if let body, !headers.contains(where: { $0.0.lowercased() == "transfer-encoding" }) {
                head.headers.add(name: "Content-Length", value: String(body.reduce(0) { $0 + $1.count }))
            }
            // The whole request in one write; and a server that answers (and closes, as asked)
            // before the request's last part is written has still answered: read its
            // response before reporting the failed write. (Written part by part, a GET's
            // empty end sometimes met a connection the daemon had already closed after
            // responding to the head.)
            var parts: [HTTPClientRequestPart] = [.head(head)]
            parts += (body ?? []).filter { !$0.isEmpty }.map { .body(.byteBuffer(ByteBuffer(bytes: $0))) }
            parts.append(.end(nil))
            var writeFailure: (any Error)?
            do { try await outbound.write(contentsOf: parts) } catch { writeFailure = error }
            var status = 0
            var responseHeaders = HTTPHeaders()
            var received = Data()
            for try await part in inbound {
                switch part {
                case .head(let head):
                    status = Int(head.status.code)
                    responseHeaders = head.headers
                case .body(let buffer):
                    received.append(contentsOf: buffer.readableBytesView)
                    // (Only for a streamed read: the text so far, decoded at each part, is
                    // quadratic in a large body.)
                    if let stopEarly, stopEarly(status, String(decoding: received, as: UTF8.self)) {
                        return Response(status: status, headers: responseHeaders, body: received)
                    }
                case .end:
                    return Response(status: status, headers: responseHeaders, body: received)
                }
            }
            if let writeFailure, status == 0 { throw writeFailure }
            throw TestFailure("the server closed the connection before the response ended (\(received.count) bytes read)")
        }
    }
}
