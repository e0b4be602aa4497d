/// What an event is about (`customer-7`, `sensor/12`): the key its publisher gives it
/// (PUB `key=`, the HTTP `Replay-Key` header, `replayctl send --key`). The key is stored
/// with the event, given back on every read, covered by the event's hash-chain link, and
/// indexed per stream, so that the latest event of a key is one lookup (`GET`,
/// `replayctl get`). An event with a key and an empty payload is the key's tombstone: the
/// key has no current value after it.
///
/// A key is 1 to 256 bytes of UTF-8 without spaces or control characters, so that it is one
/// word on the socket's command line and in an `EVENT` line, a valid HTTP field value, and
/// readable in the `events` view as it is.
///
/// Kept as its bytes, one reference (8 bytes, and `nil` in the same 8), as `TraceParent`
/// is: it rides in every publish's `AppendConditions`, which every PUB copies.
public struct EventKey: Sendable, Hashable, CustomStringConvertible {
    /// The key, valid UTF-8.
    public let bytes: [UInt8]

    /// The longest key, in bytes.
    public static let maxBytes = 256

    /// The key as text.
    public var text: String { String(decoding: bytes, as: UTF8.self) }

    /// `nil` unless `text` is a valid key.
    public init?(_ text: some StringProtocol) {
        self.init(validating: Array(text.utf8))
    }

    /// A stored one, as a read hands it over; `nil` if the row no longer holds a valid one
    /// (edited by hand): an event is never given a key that could not come in.
    public init?(bytes: UnsafeRawBufferPointer) {
        self.init(validating: Array(bytes))
    }

    private init?(validating bytes: [UInt8]) {
        guard (1...Self.maxBytes).contains(bytes.count), !bytes.contains(where: Self.isRefused),
            String(validating: bytes, as: UTF8.self) != nil
        else { return nil }
        self.bytes = bytes
    }

    public var description: String { text }

    /// What a refusal says, on both doors.
    public static let format = "1 to \(maxBytes) bytes of UTF-8 without spaces or control characters"

    /// Space, and the ASCII control characters (the line's separators among them).
    private static func isRefused(_ byte: UInt8) -> Bool {
        byte <= 0x20 || byte == 0x7F
    }
}
