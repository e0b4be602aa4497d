/// An event's link in its stream's hash chain: SHA-256 over the previous event's hash and
/// the event itself (`HashChain` in the store says exactly what). 32 bytes held inline, as
/// four words, so a stream's chain head and every event that carries its hash cost no
/// allocation (an `[UInt8]` would be one per event on the writer).
public struct EventHash: Sendable, Hashable, CustomStringConvertible {
    /// The bytes in order, eight to a word, the first byte the high byte of `words.0`.
    public private(set) var words: (UInt64, UInt64, UInt64, UInt64)

    /// The hash before a stream's first event: 32 zero bytes.
    public static let zero = EventHash(words: (0, 0, 0, 0))

    public init(words: (UInt64, UInt64, UInt64, UInt64)) {
        self.words = words
    }

    /// `nil` unless `bytes` holds exactly 32 bytes. Inlinable, as `withUnsafeBytes` and `==`
    /// are: the store's reads take each event's hash through them, once per event.
    @inlinable
    public init?(bytes: UnsafeRawBufferPointer) {
        guard bytes.count == 32 else { return nil }
        self.init(
            words: (
                UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self)),
                UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 16, as: UInt64.self)),
                UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 24, as: UInt64.self))
            ))
    }

    /// `nil` unless `hex` is 64 hexadecimal digits (either case).
    public init?(hex: some StringProtocol) {
        let digits = Array(hex.utf8)
        guard digits.count == 64 else { return nil }
        var words: [UInt64] = []
        for start in stride(from: 0, to: 64, by: 16) {
            guard let word = UInt64(String(decoding: digits[start..<start + 16], as: UTF8.self), radix: 16) else { return nil }
            words.append(word)
        }
        self.words = (words[0], words[1], words[2], words[3])
    }

    /// The 32 bytes, valid only during `body`.
    @inlinable
    public func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        var bigEndian = (words.0.bigEndian, words.1.bigEndian, words.2.bigEndian, words.3.bigEndian)
        return try Swift.withUnsafeBytes(of: &bigEndian, body)
    }

    /// The 32 bytes as an array (for a database's blob column).
    public var bytes: [UInt8] { withUnsafeBytes { Array($0) } }

    /// 64 lowercase hexadecimal digits, as every door shows a hash: written into the
    /// string's own storage, its one allocation (an SSE response writes one per chunk).
    public var hex: String {
        let digits: StaticString = "0123456789abcdef"
        return String(unsafeUninitializedCapacity: 64) { text in
            withUnsafeBytes { bytes in
                for (index, byte) in bytes.enumerated() {
                    text[2 * index] = digits.utf8Start[Int(byte >> 4)]
                    text[2 * index + 1] = digits.utf8Start[Int(byte & 0x0F)]
                }
            }
            return 64
        }
    }

    public var description: String { hex }

    @inlinable
    public static func == (lhs: EventHash, rhs: EventHash) -> Bool {
        lhs.words.0 == rhs.words.0 && lhs.words.1 == rhs.words.1 && lhs.words.2 == rhs.words.2 && lhs.words.3 == rhs.words.3
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(words.0)
        hasher.combine(words.1)
        hasher.combine(words.2)
        hasher.combine(words.3)
    }
}
