import NIOCore

/// The words of a control line, read in place: no `String` is made unless a caller asks
/// for one. The frames that carry events (`PUB`, `+OK <seq>`, `EVENT`) are decoded through
/// this, because splitting a line into `String`s (grapheme by grapheme) was the largest
/// cost of a client reading a catch-up and of the server reading pipelined publishes.
///
/// It reads the line's bytes through one raw pointer, valid inside `LineWords.reading`:
/// going through `ByteBufferView` paid an exclusivity check on the buffer's storage for
/// every byte, which a producer's longer PUB lines made a visible share of the event loop.
struct LineWords {
    typealias Word = UnsafeRawBufferPointer

    private let line: UnsafeRawBufferPointer
    private var position: Int

    private init(_ line: UnsafeRawBufferPointer) {
        self.line = line
        position = 0
    }

    /// Runs `body` with the words of `line`; the words are valid only inside it.
    static func reading<R>(_ line: ByteBuffer, _ body: (inout LineWords) throws(ReplayError) -> R) throws(ReplayError) -> R {
        do {
            return try line.withUnsafeReadableBytes { bytes in
                var words = LineWords(bytes)
                return try body(&words)
            }
        } catch let error as ReplayError {
            throw error
        } catch {
            preconditionFailure("only ReplayError is thrown here")
        }
    }

    /// The next word, or `nil` at the end of the line.
    mutating func next() -> Word? {
        skipSpaces()
        guard position < line.count else { return nil }
        let start = position
        while position < line.count, !Self.isSpace(line[position]) { position += 1 }
        return Word(rebasing: line[start..<position])
    }

    /// Whether only spaces are left.
    mutating func atEnd() -> Bool {
        skipSpaces()
        return position == line.count
    }

    private mutating func skipSpaces() {
        while position < line.count, Self.isSpace(line[position]) { position += 1 }
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t")
    }

    /// Whether `word` is `literal`, byte for byte.
    static func matches(_ word: Word, _ literal: StaticString) -> Bool {
        guard word.count == literal.utf8CodeUnitCount else { return false }
        return literal.withUTF8Buffer { word.elementsEqual($0) }
    }

    /// `word` split at its first `=`: (key, value), or `nil` if it has none.
    static func keyValue(_ word: Word) -> (key: Word, value: Word)? {
        guard let equals = word.firstIndex(of: UInt8(ascii: "=")) else { return nil }
        return (Word(rebasing: word[..<equals]), Word(rebasing: word[(equals + 1)...]))
    }

    /// `word` as a decimal number: digits only, no sign, no overflow.
    static func integer<T: FixedWidthInteger & UnsignedInteger>(_ word: Word, as: T.Type = T.self) -> T? {
        guard !word.isEmpty, word.count <= 20 else { return nil }
        var value: T = 0
        for byte in word {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(T(byte - UInt8(ascii: "0")))
            guard !overflow1, !overflow2 else { return nil }
            value = sum
        }
        return value
    }

    static func string(_ word: Word) -> String {
        String(decoding: word, as: UTF8.self)
    }
}

/// A decoded word kept as a `String` for as long as the same bytes keep coming: a
/// subscription's events repeat their stream, sid and (within a commit) time, and a
/// time does not fit in a small string, so reusing it saves an allocation per event.
struct CachedWord {
    private var bytes: [UInt8] = []
    private var text = ""

    mutating func string(_ word: LineWords.Word) -> String {
        if !word.elementsEqual(bytes) {
            bytes = Array(word)
            text = LineWords.string(word)
        }
        return text
    }
}
