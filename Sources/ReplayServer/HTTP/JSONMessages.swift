import Foundation

/// JSON mode (Durable Streams PROTOCOL.md §9.1): a stream of `application/json` keeps message boundaries.
/// A POST body is one message, or an array whose elements are messages (one level
/// flattened); a read returns the messages as one JSON array.
///
/// Each message is stored as the exact bytes the writer sent: Foundation's
/// `JSONSerialization` validates the body, but it can only hand back re-encoded values
/// (keys reordered, numbers reformatted), so the top-level array is cut into its elements
/// here, by a scanner that only needs to know strings, escapes and nesting.
enum JSONMessages {
    enum Problem: Error, Equatable {
        case invalid
        case emptyArray
    }

    /// The messages of a body; an empty array is allowed only where `allowEmpty` (a PUT).
    static func split(_ body: Data, allowEmpty: Bool) throws(Problem) -> [Data] {
        guard (try? JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed])) != nil else { throw .invalid }
        let bytes = [UInt8](body)
        var start = 0
        var end = bytes.count
        while start < end, isSpace(bytes[start]) { start += 1 }
        while end > start, isSpace(bytes[end - 1]) { end -= 1 }
        guard bytes[start] == UInt8(ascii: "[") else { return [Data(bytes[start..<end])] }
        var messages: [Data] = []
        var depth = 0
        var inString = false
        var escaped = false
        var elementStart = start + 1
        for index in start..<end {
            let byte = bytes[index]
            if inString {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"): depth += 1
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                depth -= 1
                if depth == 0 { append(bytes[elementStart..<index], to: &messages) }
            case UInt8(ascii: ",") where depth == 1:
                append(bytes[elementStart..<index], to: &messages)
                elementStart = index + 1
            default: break
            }
        }
        if messages.isEmpty, !allowEmpty { throw .emptyArray }
        return messages
    }

    private static func append(_ element: ArraySlice<UInt8>, to messages: inout [Data]) {
        var slice = element
        while let first = slice.first, isSpace(first) { slice.removeFirst() }
        while let last = slice.last, isSpace(last) { slice.removeLast() }
        if !slice.isEmpty { messages.append(Data(slice)) }
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }
}
