import Foundation

/// A shell command running in a process group of its own, so that one signal reaches
/// every process of its pipeline.
struct ProcessGroup: Sendable {
    let pid: pid_t
    let stdout: Int32
    let stderr: Int32

    struct SpawnError: Error, CustomStringConvertible {
        let description: String
    }

    /// Runs `/bin/sh -c command` with stdin from /dev/null and stdout, stderr to pipes.
    static func spawn(_ command: String, environment: [String: String]) throws -> ProcessGroup {
        var out: [Int32] = [0, 0]
        var err: [Int32] = [0, 0]
        guard pipe(&out) == 0 else { throw SpawnError(description: "pipe: \(String(cString: strerror(errno)))") }
        guard pipe(&err) == 0 else {
            close(out[0]); close(out[1])
            throw SpawnError(description: "pipe: \(String(cString: strerror(errno)))")
        }
        // Our ends must not leak into other children (dup2 in the child clears the flag on
        // the copies it makes for stdout and stderr).
        for fd in out + err { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, out[1], 1)
        posix_spawn_file_actions_adddup2(&actions, err[1], 2)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Process group 0 makes the child the leader of a new group: kill(-pid) reaches the
        // whole pipeline. Signals the daemon handles or ignores are reset to default, and
        // none is blocked, so SIGTERM works on the child.
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGQUIT] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let arguments = ["/bin/sh", "-c", command]
        let variables = environment.map { "\($0.key)=\($0.value)" }
        var pid: pid_t = 0
        let status = withCStrings(arguments) { argv in
            withCStrings(variables) { envp in
                posix_spawn(&pid, "/bin/sh", &actions, &attributes, argv, envp)
            }
        }
        close(out[1])
        close(err[1])
        guard status == 0 else {
            close(out[0]); close(err[0])
            throw SpawnError(description: "cannot start /bin/sh: \(String(cString: strerror(status)))")
        }
        return ProcessGroup(pid: pid, stdout: out[0], stderr: err[0])
    }

    /// Signals every process of the group.
    func signal(_ signal: Int32) {
        kill(-pid, signal)
    }

    /// Waits for the shell to exit; returns its `waitpid` status.
    func wait() -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        return status
    }
}

private func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R) -> R {
    var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
    pointers.append(nil)
    defer { for pointer in pointers { free(pointer) } }
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}
