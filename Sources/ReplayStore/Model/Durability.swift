/// How hard a commit tries to survive failures. Acknowledgements are sent after commit
/// either way; what differs is what a commit survives.
public enum Durability: String, Sendable, CaseIterable {
    /// `synchronous=FULL`: every commit is fsynced; survives power loss and OS crashes. Default.
    case full
    /// `synchronous=NORMAL` in WAL mode: survives a crash of the process, but the last
    /// commits may be lost if the machine loses power.
    case normal
}
