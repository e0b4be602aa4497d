/// The protocol's default limits (docs/PROTOCOL.md), in one place: the decoder's defaults,
/// the daemon's configuration and its flags all start from these.
public enum ProtocolLimits {
    /// The longest control line, in bytes (`--max-line`).
    public static let maxLineLength = 4096
    /// The largest payload, in bytes (`--max-payload`).
    public static let maxPayload = 1 << 20
}
