/// LEB128 varints, for the compact lists stored in a row's bytes (a producer's runs, a
/// group's held first deliveries): seven bits a byte, the high bit set on all but the
/// last. Small numbers, which differences between neighbours mostly are, take one byte.
struct VarintWriter {
    private(set) var bytes: [UInt8] = []

    init(reservingCapacity capacity: Int = 0) {
        bytes.reserveCapacity(capacity)
    }

    mutating func put(_ value: UInt64) {
        Self.encode(value) { bytes.append($0) }
    }

    /// `value` written at `offset` in `buffer` (which has room for its up to 10 bytes),
    /// `offset` moved past it: for bytes kept on the stack.
    static func put(_ value: UInt64, into buffer: UnsafeMutableRawBufferPointer, at offset: inout Int) {
        encode(value) { byte in
            buffer[offset] = byte
            offset += 1
        }
    }

    /// `value`'s bytes, in order.
    @inline(__always)
    private static func encode(_ value: UInt64, _ emit: (UInt8) -> Void) {
        var rest = value
        while rest >= 0x80 {
            emit(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        emit(UInt8(rest))
    }

    /// Bytes as they are (a name, after its length).
    mutating func put(bytes: some Sequence<UInt8>) {
        self.bytes.append(contentsOf: bytes)
    }

    /// A signed difference, zigzag-encoded so that small ones either way stay small.
    mutating func put(signed value: Int64) {
        put(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }
}

/// Reads what `VarintWriter` wrote.
struct VarintReader {
    private let bytes: [UInt8]
    private var offset = 0

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    var isAtEnd: Bool { offset >= bytes.count }

    /// The next varint; `nil` at the end, or where one is cut short or too long.
    mutating func next() -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while offset < bytes.count, shift < 64 {
            let byte = bytes[offset]
            offset += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return value }
            shift += 7
        }
        return nil
    }

    mutating func nextSigned() -> Int64? {
        guard let raw = next() else { return nil }
        return Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1)
    }

    /// The next `count` bytes; `nil` where fewer are left.
    mutating func take(_ count: Int) -> ArraySlice<UInt8>? {
        guard count >= 0, count <= bytes.count - offset else { return nil }
        defer { offset += count }
        return bytes[offset..<offset + count]
    }
}
