import Foundation
import NIOCore

extension ByteBuffer {
    /// The readable bytes copied into `Data`, with no allocation beyond `Data`'s own (none
    /// up to 14 bytes). `Data(readableBytesView)` costs one more on every payload: its
    /// generic initializer first casts the view to `ContiguousBytes`, and the 40-byte view
    /// does not fit an existential's inline buffer, so the cast boxes it.
    public var readableData: Data {
        withUnsafeReadableBytes { bytes in
            guard let base = bytes.baseAddress, !bytes.isEmpty else { return Data() }
            return Data(bytes: base, count: bytes.count)
        }
    }
}
