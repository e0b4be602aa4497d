import ReplayProtocol

/// What a client call can fail with.
public enum ReplayClientError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Nothing accepts connections on the socket: the daemon is not running there.
    case daemonNotRunning(socketPath: String, reason: String)
    /// The connection closed before the reply came.
    case disconnected
    /// The daemon answered with an error.
    case server(ReplayError)
    /// The subscribed stream failed (or was deleted); the message is the stream's.
    case streamFailed(stream: String, message: String)
    /// The daemon sent something this client does not understand.
    case unexpectedReply(String)

    public var description: String {
        switch self {
        case .daemonNotRunning(let path, let reason):
            "replayd is not running on \(path) (\(reason)); start it with `replayd --socket \(path)` or set REPLAY_SOCKET"
        case .disconnected: "the connection to replayd closed"
        case .server(let error): "\(error.code.rawValue): \(error.message)"
        case .streamFailed(let stream, let message): "stream '\(stream)' failed: \(message)"
        case .unexpectedReply(let text): "unexpected reply from replayd: \(text)"
        }
    }
}
