import Foundation

/// Cuts a byte stream into events by the source's framing.
struct Framer {
    let framing: SourceSettings.Framing
    private var partial = Data()

    init(_ framing: SourceSettings.Framing) {
        self.framing = framing
    }

    /// The complete events in `bytes` (plus what was left over before).
    mutating func feed(_ bytes: Data) -> [Data] {
        partial.append(bytes)
        let separator: UInt8
        switch framing {
        case .whole: return []
        case .lines: separator = 0x0A
        case .nul: separator = 0x00
        }
        var events: [Data] = []
        var start = partial.startIndex
        while let end = partial[start...].firstIndex(of: separator) {
            var event = partial[start..<end]
            if framing == .lines, event.last == 0x0D { event = event.dropLast() }  // CRLF
            events.append(Data(event))
            start = end + 1
        }
        partial = Data(partial[start...])
        return events
    }

    /// At end of output: the last unterminated record, or the whole output.
    mutating func finish() -> Data? {
        defer { partial = Data() }
        if framing == .whole { return partial }
        return partial.isEmpty ? nil : partial
    }
}
