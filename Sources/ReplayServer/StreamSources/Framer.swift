import Foundation
import ReplayModel

/// Cuts a byte stream into events by the source's framing.
struct Framer {
    let framing: SourceOptions.Framing
    private var partial = Data()

    init(_ framing: SourceOptions.Framing) {
        self.framing = framing
    }

    /// The complete events in `bytes` (plus what was left over before). Scans raw bytes:
    /// Data's generic slicing cost microseconds per event, and a fast source's output is
    /// framed here, on the cooperative pool.
    mutating func feed(_ bytes: Data) -> [Data] {
        partial.append(bytes)
        let separator: UInt8
        switch framing {
        case .whole: return []
        case .lines: separator = 0x0A
        case .nul: separator = 0x00
        }
        let (events, consumed) = partial.withUnsafeBytes { raw -> ([Data], Int) in
            var events: [Data] = []
            var start = 0
            while start < raw.count, let found = raw[start...].firstIndex(of: separator) {
                var end = found
                if framing == .lines, end > start, raw[end - 1] == 0x0D { end -= 1 }  // CRLF
                events.append(Data(raw[start..<end]))
                start = found + 1
            }
            return (events, start)
        }
        if consumed > 0 { partial.removeSubrange(partial.startIndex..<(partial.startIndex + consumed)) }
        return events
    }

    /// At end of output: the last unterminated record, or the whole output.
    mutating func finish() -> Data? {
        defer { partial = Data() }
        if framing == .whole { return partial }
        return partial.isEmpty ? nil : partial
    }
}
