import NIOCore

/// Writing the control lines of the frames that carry events directly into the output
/// buffer: no array of words, no interpolated strings. Replies and events are written
/// once per event, so this is on the hot path of every publish and every delivery.
extension ByteBuffer {
    mutating func writeDecimal<T: FixedWidthInteger & UnsignedInteger>(_ value: T) {
        // Digits from the last, into a stack buffer, then one copy: one pass of divisions
        // by a constant (which compile to multiplications).
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 40) { digits in
            var rest = value
            var start = digits.count
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
                rest /= 10
            } while rest > 0
            writeBytes(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(digits)[start...]))
        }
    }

    mutating func writeSpace() {
        writeInteger(UInt8(ascii: " "))
    }
}
