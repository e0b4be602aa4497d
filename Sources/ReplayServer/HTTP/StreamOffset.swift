/// A position in a stream as the Durable Streams protocol writes it (`Stream-Next-Offset`,
/// `offset=`): the sequence number of the last event before it, in 20 decimal digits, so
/// that offsets sort as strings in the order of positions and read as replay's sequence
/// numbers (`00000000000000000042` is "after event 42"; `SUB … from=43` over the socket).
enum StreamOffset {
    /// What an `offset=` asks for.
    enum Request: Equatable {
        /// `-1` or no offset: the stream's beginning (the oldest retained event).
        case start
        /// `now`: the current tail, skipping what exists.
        case now
        /// After this sequence number.
        case after(UInt64)
    }

    static let digits = 20

    static func text(after sequence: UInt64) -> String {
        let number = String(sequence)
        return String(repeating: "0", count: digits - number.count) + number
    }

    /// `nil` for anything but `-1`, `now` or a decimal position (at most 20 digits).
    static func parse(_ text: Substring?) -> Request? {
        guard let text else { return .start }
        switch text {
        case "-1": return .start
        case "now": return .now
        default:
            guard (1...digits).contains(text.utf8.count), text.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                let sequence = UInt64(text)
            else { return nil }
            return .after(sequence)
        }
    }
}
