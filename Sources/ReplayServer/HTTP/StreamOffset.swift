/// A position in a stream as the Durable Streams protocol writes it (`Stream-Next-Offset`,
/// `offset=`): `<sequence>_<bytes>`, two 16-digit decimal numbers, so that offsets sort as
/// strings in the order of positions. The first is the sequence number of the last event
/// before the position (replay's own numbering: `0000000000000042_0000000000000000` is
/// "after event 42", `SUB … from=43` over the socket); the second, a byte position inside
/// the next event, is always 0, as replay never cuts an event in two. The shape is the
/// reference server's, so `0000000000000000_0000000000000000` is the beginning for both.
enum StreamOffset {
    /// What an `offset=` asks for.
    enum Request: Equatable {
        /// `-1` or no offset: the stream's beginning (the oldest retained event).
        case start
        /// `now`: the current tail, skipping what exists.
        case now
        /// After this sequence number.
        case after(UInt64)
        /// `snapshot` (replay's extension): the current event of every key as of the
        /// stream's tail, then the tail's offset. A snapshot too large for one response goes
        /// on from `snapshot-<point>-<after>`, the rest of the snapshot at `point` after
        /// event `after`, which only this server's responses give.
        case snapshot(point: UInt64?, after: UInt64)
    }

    /// Where a snapshot too large for one response goes on.
    static func snapshotText(point: UInt64, after: UInt64) -> String {
        "snapshot-\(point)-\(after)"
    }

    static let digits = 16

    /// Written into the string's own storage: every answer to a POST or a read carries one,
    /// and built from padded pieces it was five strings (2 % of the daemon's CPU under POSTs).
    static func text(after sequence: UInt64) -> String {
        guard hasLength(after: sequence) else { return padded(sequence) + "_" + padded(0) }
        return String(unsafeUninitializedCapacity: length) { text in
            write(after: sequence, into: UnsafeMutableRawBufferPointer(text))
        }
    }

    /// The length of an offset's text, when its sequence number has at most 16 digits.
    static let length = 2 * digits + 1

    /// Whether the offset after `sequence` is `length` bytes long (a stream would take
    /// centuries to reach one that is not).
    static func hasLength(after sequence: UInt64) -> Bool {
        sequence < 10_000_000_000_000_000
    }

    /// Writes the offset after `sequence`, one that `hasLength`, into the first `length` of
    /// `bytes`: `text(after:)`'s, or straight into an answer's bytes
    /// (`HTTP1AnswerBytes.Fields`). Returns `length`.
    static func write(after sequence: UInt64, into bytes: UnsafeMutableRawBufferPointer) -> Int {
        var rest = sequence
        for index in (0..<digits).reversed() {
            bytes[index] = UInt8(ascii: "0") + UInt8(rest % 10)
            rest /= 10
        }
        bytes[digits] = UInt8(ascii: "_")
        for index in (digits + 1)..<length { bytes[index] = UInt8(ascii: "0") }
        return length
    }

    private static func padded(_ number: UInt64) -> String {
        let text = String(number)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }

    /// `nil` for anything but `-1`, `now` or an offset of this server's form.
    static func parse(_ text: Substring?) -> Request? {
        guard let text else { return .start }
        switch text {
        case "-1": return .start
        case "now": return .now
        case "snapshot": return .snapshot(point: nil, after: 0)
        case _ where text.hasPrefix("snapshot-"):
            let parts = text.dropFirst("snapshot-".count).split(separator: "-", omittingEmptySubsequences: false)
            guard parts.count == 2, let point = UInt64(parts[0]), let after = UInt64(parts[1]), after <= point else { return nil }
            return .snapshot(point: point, after: after)
        default:
            let parts = text.split(separator: "_", omittingEmptySubsequences: false)
            guard parts.count == 2, parts.allSatisfy({ $0.utf8.count == digits && $0.utf8.allSatisfy { (0x30...0x39).contains($0) } }),
                let sequence = UInt64(parts[0]), UInt64(parts[1]) == 0
            else { return nil }
            return .after(sequence)
        }
    }
}
