/// A W3C Trace Context `traceparent` (https://www.w3.org/TR/trace-context/), version 00:
/// `00-<trace id: 32 hex>-<parent id: 16 hex>-<flags: 2 hex>`, lowercase.
///
/// A publisher gives one with an event (PUB `trace=`, the HTTP `traceparent` header); it
/// is stored with the event as given and handed back on every read, so that whoever
/// consumes the event continues the publisher's trace, as Kafka and NATS carry it in a
/// message's headers. Checked once, where it comes in: everything after trusts `bytes`.
///
/// Kept as its bytes, one reference (8 bytes, and `nil` in the same 8): it rides in every
/// publish's `AppendConditions`, which every PUB copies, where a `String` took 16 and grew
/// the decoder's command past a plain publish's size (`ClientCommandSizeTests`).
public struct TraceParent: Sendable, Hashable, CustomStringConvertible {
    /// The header's value, exactly 55 ASCII bytes.
    public let bytes: [UInt8]

    /// The header's value as text.
    public var text: String { String(decoding: bytes, as: UTF8.self) }

    /// `nil` unless `text` is a version-00 `traceparent` whose trace and parent ids are not
    /// all zeros (the specification's "invalid" values).
    public init?(_ text: some StringProtocol) {
        let bytes = Array(text.utf8)
        guard bytes.count == 55, bytes[2] == UInt8(ascii: "-"), bytes[35] == UInt8(ascii: "-"), bytes[52] == UInt8(ascii: "-"),
            bytes[0] == UInt8(ascii: "0"), bytes[1] == UInt8(ascii: "0")
        else { return nil }
        for range in [3..<35, 36..<52, 53..<55] {
            guard bytes[range].allSatisfy(Self.isLowercaseHex) else { return nil }
        }
        guard bytes[3..<35].contains(where: { $0 != UInt8(ascii: "0") }), bytes[36..<52].contains(where: { $0 != UInt8(ascii: "0") })
        else { return nil }
        self.bytes = bytes
    }

    /// A stored one, as a read hands it over; `nil` if the row no longer holds a valid one
    /// (edited by hand): an event is never given a trace context that could not come in.
    public init?(bytes: UnsafeRawBufferPointer) {
        self.init(String(decoding: bytes, as: UTF8.self))
    }

    /// The trace's id, 32 hex digits.
    public var traceID: String { String(decoding: bytes[3..<35], as: UTF8.self) }
    /// The id of the span that published the event, 16 hex digits.
    public var parentID: String { String(decoding: bytes[36..<52], as: UTF8.self) }
    /// Whether the publisher sampled (recorded) its trace.
    public var isSampled: Bool { UInt8(String(decoding: bytes[53...], as: UTF8.self), radix: 16).map { $0 & 1 == 1 } ?? false }

    public var description: String { text }

    /// What a refusal says, on both doors.
    public static let format = "a W3C traceparent: 00-<32 hex digits>-<16 hex digits>-<2 hex digits>, lowercase, ids not all zeros"

    private static func isLowercaseHex(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
    }
}
