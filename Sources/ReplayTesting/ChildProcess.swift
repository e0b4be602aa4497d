import CReplayTesting
import Foundation
import Subprocess

/// A process a test started, named by its process descriptor (a pidfd) rather than its pid.
/// Signals and liveness checks reach that process and no other: once a child has exited and
/// been reaped its pid is free, and a full suite reuses pids within minutes, so a signal by
/// pid meant for a daemon that had just exited could kill another test's process
/// (Sources/CReplayTesting/process_descriptor.c).
public final class ChildProcess: Sendable {
    public let pid: Int32
    /// Our own copy of swift-subprocess's descriptor, which it closes when the run ends.
    private let descriptor: Int32

    init(_ identifier: ProcessIdentifier) {
        pid = identifier.value
        descriptor = identifier.processDescriptor >= 0 ? fcntl(identifier.processDescriptor, F_DUPFD_CLOEXEC, 0) : -1
    }

    /// Sends `signal`; nothing once the process has exited. By pid only on a kernel without
    /// process descriptors (before Linux 5.4).
    public func send(_ signal: Int32) {
        if descriptor >= 0 { _ = replay_pidfd_send_signal(descriptor, signal) } else { kill(pid, signal) }
    }

    /// Whether it has exited (a zombie not yet reaped counts as exited).
    public var hasExited: Bool {
        descriptor >= 0 ? replay_pidfd_exited(descriptor) != 0 : !processIsAlive(pid)
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }
}
