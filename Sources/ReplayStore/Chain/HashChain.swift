import CLibCrypto
import Foundation
import ReplayModel

/// Each stream's hash chain: every stored event carries SHA-256 over the hash of the event
/// before it and the event itself, so changing, removing or reordering any stored event
/// breaks every link after it, and a reader holding one hash (a signed checkpoint) can
/// check everything up to it.
///
/// What is hashed, in this order (the format a checker in any language rebuilds):
///
///     previous hash       32 bytes (32 zero bytes before a stream's first event)
///     stream name length   2 bytes, big-endian
///     stream name          UTF-8
///     sequence number      8 bytes, big-endian
///     commit time          8 bytes, big-endian, ms since 1970-01-01 UTC (signed)
///     key marker           1 byte: 0 for an event without a key, 1 for one with a key
///     key length           2 bytes, big-endian (only with marker 1)
///     key                  UTF-8 (only with marker 1)
///     payload length       8 bytes, big-endian
///     payload
///
/// The key is part of the event (it says what the event is about, and compaction and `GET`
/// go by it); the trace context and a derived event's origin are metadata about delivery,
/// not the event, and are not hashed. SHA-256 is OpenSSL's (libcrypto, with the CPU's SHA extensions
/// where it has them), on a context on the stack: no allocation per hash
/// (Sources/CLibCrypto/shim.h says why not swift-crypto's).
enum HashChain {
    /// The hash of the event `sequence` of `stream` that follows `previous`. What comes
    /// before the payload is laid out in one buffer on the stack and hashed in one call:
    /// each call into libcrypto copies into its context and checks its length, and five
    /// calls cost about a tenth of a link for a 100-byte event.
    static func link(
        after previous: EventHash, stream: String, sequence: UInt64, millis: Int64, key: UnsafeRawBufferPointer? = nil,
        payload: UnsafeRawBufferPointer
    ) -> EventHash {
        var context = SHA256_CTX()
        SHA256_Init(&context)
        var name = stream
        name.withUTF8 { name in
            // Previous hash, name length and name, then sequence, time, key marker (and the
            // key's length and key), and payload length: 32 + 2 + the name + 25 bytes, and
            // 2 + the key's more with a key.
            let keyBytes = key.map { 2 + $0.count } ?? 0
            let size = 59 + name.count + keyBytes
            withUnsafeTemporaryAllocation(byteCount: size, alignment: 8) { header in
                previous.withUnsafeBytes { header.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: 32) }
                header.storeBytes(of: UInt16(truncatingIfNeeded: name.count).bigEndian, toByteOffset: 32, as: UInt16.self)
                if let base = name.baseAddress { (header.baseAddress! + 34).copyMemory(from: base, byteCount: name.count) }
                let fields = 34 + name.count
                header.storeBytes(of: sequence.bigEndian, toByteOffset: fields, as: UInt64.self)
                header.storeBytes(of: millis.bigEndian, toByteOffset: fields + 8, as: Int64.self)
                header.storeBytes(of: UInt8(key == nil ? 0 : 1), toByteOffset: fields + 16, as: UInt8.self)
                if let key {
                    header.storeBytes(of: UInt16(truncatingIfNeeded: key.count).bigEndian, toByteOffset: fields + 17, as: UInt16.self)
                    if let base = key.baseAddress { (header.baseAddress! + fields + 19).copyMemory(from: base, byteCount: key.count) }
                }
                header.storeBytes(of: UInt64(payload.count).bigEndian, toByteOffset: fields + 17 + keyBytes, as: UInt64.self)
                _ = SHA256_Update(&context, header.baseAddress, size)
            }
        }
        if let base = payload.baseAddress { _ = SHA256_Update(&context, base, payload.count) }
        var digest: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        withUnsafeMutableBytes(of: &digest) { _ = SHA256_Final($0.baseAddress!.assumingMemoryBound(to: UInt8.self), &context) }
        return withUnsafeBytes(of: &digest) { EventHash(bytes: $0)! }
    }

    /// `link` over a payload held as `Data`.
    static func link(
        after previous: EventHash, stream: String, sequence: UInt64, millis: Int64, key: EventKey? = nil, payload: some ContiguousBytes
    ) -> EventHash {
        payload.withUnsafeBytes { payload in
            guard let key else { return link(after: previous, stream: stream, sequence: sequence, millis: millis, payload: payload) }
            return key.bytes.withUnsafeBytes { link(after: previous, stream: stream, sequence: sequence, millis: millis, key: $0, payload: payload) }
        }
    }
}

/// A read's running check of the chain, one segment of one stream at a time (see
/// `forEachEvent` in each store): each stored event's hash must be the link from the one
/// before it, the first from the hash the same read snapshot holds before it.
struct ChainCheck {
    let stream: String
    /// The hash the next event must follow; `.zero` where no hashed event comes before it
    /// (a stream's start, or events stored before chaining began, which hold no hash).
    private var previous: EventHash = .zero
    /// Whether the check has its starting hash yet (taken at the segment's first event).
    private(set) var started = false

    init(stream: String) {
        self.stream = stream
    }

    /// Starts from what the snapshot holds before the first event: that event's
    /// predecessor's hash, or the stream's chain base (the hash before its first retained
    /// event).
    mutating func start(after stored: EventHash) {
        previous = stored
        started = true
    }

    /// Checks one event; throws `corruptEvent` naming it if its stored hash is not the link.
    mutating func check(
        sequence: UInt64, millis: Int64, key: UnsafeRawBufferPointer?, payload: UnsafeRawBufferPointer, stored: UnsafeRawBufferPointer?
    ) throws(StoreError) {
        let expected = HashChain.link(after: previous, stream: stream, sequence: sequence, millis: millis, key: key, payload: payload)
        guard let stored else {
            // Written before the chain began: nothing to check, unless a hashed event came
            // before it (then its hash was removed).
            guard previous == .zero else { throw .corruptEvent(stream: stream, sequence: sequence, expected: expected.hex, found: "none") }
            return
        }
        guard let found = EventHash(bytes: stored), found == expected else {
            throw .corruptEvent(stream: stream, sequence: sequence, expected: expected.hex, found: Self.hex(stored))
        }
        previous = found
    }

    private static func hex(_ bytes: UnsafeRawBufferPointer) -> String {
        bytes.map { byte in (byte < 16 ? "0" : "") + String(byte, radix: 16) }.joined()
    }
}
