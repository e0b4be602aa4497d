import NIOCore

/// Writing the control lines of the frames that carry events directly into the output
/// buffer: no array of words, no interpolated strings. Replies and events are written
/// once per event, so this is on the hot path of every publish and every delivery.
extension ByteBuffer {
    mutating func writeDecimal<T: FixedWidthInteger & UnsignedInteger>(_ value: T) {
        // At most 39 digits (a 128-bit value).
        writeFrame(maximumBytes: 40) { $0.putDecimal(value) }
    }

    mutating func writeSpace() {
        writeInteger(UInt8(ascii: " "))
    }
}
