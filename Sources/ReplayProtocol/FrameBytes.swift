import NIOCore

/// A frame's bytes written straight into a buffer's free space, after one check of its
/// capacity (`ByteBuffer.writeFrame`).
///
/// Why not `ByteBuffer`'s own writes: an `EVENT` frame is eleven pieces, and each write
/// checks the capacity again and reaches the buffer's storage, a class, whose properties
/// Swift checks for exclusive access at run time. In a one-reader catch-up those checks
/// (`swift_beginAccess` and the thread-local lookups behind it) and the capacity checks
/// were 7 % of all samples of the machine, framing on the read threads.
struct FrameBytes: ~Copyable {
    private let base: UnsafeMutableRawBufferPointer
    private(set) var count = 0

    fileprivate init(_ base: UnsafeMutableRawBufferPointer) {
        self.base = base
    }

    mutating func put(_ byte: UInt8) {
        precondition(count < base.count, "a frame longer than its bound")
        base[count] = byte
        count += 1
    }

    mutating func put(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
        precondition(bytes.count <= base.count - count, "a frame longer than its bound")
        (base.baseAddress! + count).copyMemory(from: source, byteCount: bytes.count)
        count += bytes.count
    }

    mutating func put(_ bytes: some Collection<UInt8>) {
        let copied: Void? = bytes.withContiguousStorageIfAvailable { put(UnsafeRawBufferPointer($0)) }
        if copied != nil { return }
        for byte in bytes { put(byte) }
    }

    mutating func put(_ text: String) {
        var text = text
        text.withUTF8 { put(UnsafeRawBufferPointer($0)) }
    }

    mutating func put(_ text: StaticString) {
        put(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Counts the digits, then writes them from the last, each in its place: one pass of
    /// divisions by a constant (which compile to multiplications) for each.
    mutating func putDecimal<T: FixedWidthInteger & UnsignedInteger>(_ value: T) {
        var digits = 1
        var rest = value / 10
        while rest > 0 {
            digits += 1
            rest /= 10
        }
        precondition(digits <= base.count - count, "a frame longer than its bound")
        rest = value
        var index = count + digits
        repeat {
            index -= 1
            base[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
            rest /= 10
        } while rest > 0
        count += digits
    }
}

extension ByteBuffer {
    /// Writes a frame of at most `maximumBytes` through `body`, with one check of the
    /// buffer's capacity. (Writing past the free space stops the process, as an index
    /// out of range does: the bound is the caller's arithmetic, not the client's input.)
    mutating func writeFrame(maximumBytes: Int, _ body: (inout FrameBytes) -> Void) {
        writeWithUnsafeMutableBytes(minimumWritableBytes: maximumBytes) { space in
            var frame = FrameBytes(space)
            body(&frame)
            return frame.count
        }
    }
}
