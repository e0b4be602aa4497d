/// The version of replay, reported by `--version`, HELLO and the start-up log line.
public enum ReplayVersion {
    public static let current = "0.1.0"
}
