import Foundation

/// Where daemon and clients meet when nobody says otherwise.
public enum ReplayDefaults {
    /// `$REPLAY_SOCKET`, else `$XDG_RUNTIME_DIR/replayd.sock`, else `/tmp/replayd-$UID.sock`.
    public static var socketPath: String {
        let environment = ProcessInfo.processInfo.environment
        if let path = environment["REPLAY_SOCKET"], !path.isEmpty { return path }
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty { return runtime + "/replayd.sock" }
        return "/tmp/replayd-\(getuid()).sock"
    }
}
