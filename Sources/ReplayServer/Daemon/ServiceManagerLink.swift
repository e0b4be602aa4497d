import Foundation

/// What a service manager asked of the daemon through its environment (systemd's
/// `sd_notify(3)` protocol): where to send its state (`NOTIFY_SOCKET`, a path or an
/// abstract name starting with `@`), and how often to prove it is alive
/// (`WATCHDOG_USEC`, for this process if `WATCHDOG_PID` says so).
public struct ServiceManagerLink: Sendable, Equatable {
    public let socket: String
    public let watchdog: Duration?

    /// The link the environment gives, `nil` if none; the variables are then removed, so
    /// that the sources the daemon starts do not notify in its name.
    public static func take() -> ServiceManagerLink? {
        defer { for name in ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"] { unsetenv(name) } }
        return from(ProcessInfo.processInfo.environment, pid: getpid())
    }

    static func from(_ environment: [String: String], pid: pid_t) -> ServiceManagerLink? {
        guard let socket = environment["NOTIFY_SOCKET"], !socket.isEmpty else { return nil }
        var watchdog: Duration?
        if let text = environment["WATCHDOG_USEC"], let micros = Int64(text), micros > 0,
            environment["WATCHDOG_PID"].map({ $0 == String(pid) }) ?? true
        {
            watchdog = .microseconds(micros)
        }
        return ServiceManagerLink(socket: socket, watchdog: watchdog)
    }
}
