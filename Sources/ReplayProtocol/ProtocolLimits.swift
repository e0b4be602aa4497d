/// The protocol's default limits (docs/PROTOCOL.md), in one place: the decoder's defaults,
/// the daemon's configuration and its flags all start from these.
public enum ProtocolLimits {
    /// The longest control line, in bytes (`--max-line`).
    public static let maxLineLength = 4096
    /// The largest payload, in bytes (`--max-payload`).
    public static let maxPayload = 1 << 20
    /// Events in one `ATOMIC` send, and their payload bytes together.
    public static let maxAtomicEvents = 1000
    public static let maxAtomicBytes = 16 << 20
    /// The most pending events one `SCHEDULED` lists, and the payload bytes it lists at
    /// most (it stops before the event that would pass them, after one at least).
    public static let maxScheduledListed = 1000
    public static let maxScheduledListedBytes = 8 << 20
    /// Producer ids and consumer names, in bytes.
    public static let maxNameLength = 200
}
