import NIOCore

/// Writing the control lines of the frames that carry events directly into the output
/// buffer: no array of words, no interpolated strings. Replies and events are written
/// once per event, so this is on the hot path of every publish and every delivery.
extension ByteBuffer {
    mutating func writeDecimal<T: FixedWidthInteger & UnsignedInteger>(_ value: T) {
        if value < 10 {
            writeInteger(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value))
            return
        }
        var digits = 0
        var rest = value
        while rest > 0 {
            digits += 1
            rest /= 10
        }
        rest = value
        let start = writerIndex
        writeRepeatingByte(UInt8(ascii: "0"), count: digits)
        var index = start + digits - 1
        while rest > 0 {
            setInteger(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10), at: index)
            rest /= 10
            index -= 1
        }
    }

    mutating func writeSpace() {
        writeInteger(UInt8(ascii: " "))
    }
}
