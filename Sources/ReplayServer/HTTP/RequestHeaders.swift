import Foundation
import HTTPTypes
import Hummingbird
import ReplayAuth
import ReplayModel
import ReplayStore

/// The headers of one request, parsed and checked in this one place: each malformed
/// header is a `400 Bad Request` that names it (Durable Streams PROTOCOL.md §5).
struct RequestHeaders {
    let fields: HTTPFields

    /// `Stream-Closed: true` (case-insensitive); any other value counts as absent (§4.1).
    var closes: Bool { fields.value(.streamClosed)?.lowercased() == "true" }

    /// `Stream-Seq`, the writer's own sequence label.
    var writerSequence: String? { fields.value(.streamSeq) }

    /// The token of `Authorization: Bearer <token>` (the scheme's case does not matter,
    /// RFC 7235): the daemon's `--http-token`, a scoped token, or a wake's.
    var bearerToken: String? { fields.value(.authorization).flatMap(BearerToken.from(header:)) }

    /// `If-None-Match`, for a catch-up read's ETag.
    var ifNoneMatch: String? { fields.value(.ifNoneMatch) }
    /// The request's W3C trace context. One that does not parse is ignored, as the Trace
    /// Context specification has a receiver do (the events are stored untraced).
    var traceParent: TraceParent? { fields.value(.traceparent).flatMap { TraceParent($0) } }

    /// `Replay-Key`, the key of each of the request's events; one that is not a key is
    /// refused (stored without it, the events would lose what they are about).
    func key() throws -> EventKey? {
        guard let value = fields.value(.replayKey) else { return nil }
        guard let key = EventKey(value) else { throw HTTPProblem.invalid("Replay-Key takes \(EventKey.format)") }
        return key
    }

    /// `Replay-TTL`, how long each of the request's events lives (seconds).
    func ttl() throws -> EventTTL? {
        try ttl(.replayTTL)
    }

    /// `Replay-Event-TTL`, a PUT's default for the new stream's events (seconds).
    func eventTTL() throws -> EventTTL? {
        try ttl(.replayEventTTL)
    }

    /// `Replay-Compact: true` and `Replay-Tombstone-Retention` (seconds), a PUT's key
    /// compaction for the new stream; `nil`: none.
    func compaction() throws -> KeyCompaction? {
        let retention = fields.value(.replayTombstoneRetention)
        guard let compact = fields.value(.replayCompact) else {
            if retention != nil { throw HTTPProblem.invalid("Replay-Tombstone-Retention needs Replay-Compact: true") }
            return nil
        }
        switch compact.lowercased() {
        case "true": break
        case "false":
            if retention != nil { throw HTTPProblem.invalid("Replay-Tombstone-Retention needs Replay-Compact: true") }
            return nil
        default: throw HTTPProblem.invalid("Replay-Compact takes true or false")
        }
        guard let retention else { return KeyCompaction() }
        guard let seconds = Double(retention), seconds.isFinite, seconds >= 0, seconds <= Double(StreamConfig.maxTimeToLive) else {
            throw HTTPProblem.invalid("Replay-Tombstone-Retention takes seconds from 0 to \(StreamConfig.maxTimeToLive), such as 86400")
        }
        return KeyCompaction(tombstoneRetention: seconds)
    }

    private func ttl(_ name: HTTPField.Name) throws -> EventTTL? {
        guard let value = fields.value(name) else { return nil }
        guard let ttl = EventTTL(Substring(value)) else { throw HTTPProblem.invalid("\(name) takes \(EventTTL.rangeMessage), such as 30") }
        return ttl
    }

    /// `Replay-Delay` (seconds) or `Replay-At` (an RFC 3339 time), at most one: the POST's
    /// event is scheduled rather than appended now.
    func due() throws -> DueTime? {
        let (delay, at) = (fields.value(.replayDelay), fields.value(.replayAt))
        if delay == nil, at == nil { return nil }
        guard delay == nil || at == nil else { throw HTTPProblem.invalid("send Replay-Delay or Replay-At, not both") }
        if let delay {
            guard let due = DueTime.delay(delay) else { throw HTTPProblem.invalid("Replay-Delay takes seconds from 0 to a year, such as 30") }
            return due
        }
        guard let due = at.flatMap(DueTime.time) else {
            throw HTTPProblem.invalid("Replay-At takes an RFC 3339 time within a year, such as 2026-12-01T09:00:00Z")
        }
        return due
    }

    /// The media type, lowercased, without parameters (`application/json; charset=utf-8`
    /// is `application/json`): what content types are compared by.
    ///
    /// By hand, on the bytes, because it runs for every POST (Foundation's trimming showed
    /// in a profile of appends) and hummingbird's `MediaType` does not parse what
    /// clients send: it stops at a `.` (`application/vnd.api+json`) and keeps spaces.
    static func mediaType(_ contentType: String) -> String {
        var contentType = contentType
        return contentType.withUTF8 { String(decoding: mediaTypeBytes($0).lazy.map(lowercased), as: UTF8.self) }
    }

    /// Whether two content types have the same media type, without building either (a POST
    /// compares its own with its stream's, and its stream's with JSON's).
    static func sameMediaType(_ one: String, _ other: String) -> Bool {
        var (one, other) = (one, other)
        // Over the strings' own bytes (a native string's are contiguous): through a
        // `Substring.UTF8View`, each byte compared was an index's checks: 1.5 % of the
        // daemon's CPU under a load of POSTs.
        return one.withUTF8 { one in
            other.withUTF8 { other in
                let (first, second) = (mediaTypeBytes(one), mediaTypeBytes(other))
                guard first.count == second.count else { return false }
                for (a, b) in zip(first, second) where lowercased(a) != lowercased(b) { return false }
                return true
            }
        }
    }

    /// The media type's bytes: before any `;`, without the spaces and tabs around it.
    private static func mediaTypeBytes(_ contentType: UnsafeBufferPointer<UInt8>) -> Slice<UnsafeBufferPointer<UInt8>> {
        var bytes = contentType[..<(contentType.firstIndex(of: UInt8(ascii: ";")) ?? contentType.endIndex)]
        while let first = bytes.first, first == UInt8(ascii: " ") || first == UInt8(ascii: "\t") { bytes = bytes.dropFirst() }
        while let last = bytes.last, last == UInt8(ascii: " ") || last == UInt8(ascii: "\t") { bytes = bytes.dropLast() }
        return bytes
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        (0x41...0x5A).contains(byte) ? byte + 0x20 : byte
    }

    /// The request's `Content-Type` as sent, if it names a media type (compared with
    /// `sameMediaType`, which builds no string).
    var contentType: String? {
        guard var value = fields.value(.contentType) else { return nil }
        return value.withUTF8 { Self.mediaTypeBytes($0).isEmpty } ? nil : value
    }

    /// The content type a PUT declares, as sent (a stream without one holds bytes).
    var declaredContentType: String { fields.value(.contentType) ?? "application/octet-stream" }

    static let maxTTL = StreamConfig.maxTimeToLive

    /// `Stream-TTL` or `Stream-Expires-At`, at most one of them.
    func expiry() throws -> StreamExpiry? {
        let ttl = fields.value(.streamTTL)
        let expiresAt = fields.value(.streamExpiresAt)
        if ttl != nil, expiresAt != nil {
            throw HTTPProblem.invalid("send Stream-TTL or Stream-Expires-At, not both")
        }
        if let ttl {
            // A non-negative decimal integer without sign, leading zeros, point or exponent.
            guard !ttl.isEmpty, ttl.utf8.allSatisfy({ (0x30...0x39).contains($0) }), ttl == "0" || !ttl.hasPrefix("0"),
                let seconds = Int(ttl), seconds <= Self.maxTTL
            else { throw HTTPProblem.invalid("Stream-TTL takes whole seconds from 0 to \(Self.maxTTL), such as 3600") }
            return .idle(seconds: seconds)
        }
        if let expiresAt {
            guard let date = Timestamp.parseRFC3339(expiresAt) else {
                throw HTTPProblem.invalid("Stream-Expires-At takes an RFC 3339 time, such as 2026-11-23T12:00:00Z")
            }
            return .at(date)
        }
        return nil
    }

    /// `Replay-Max-Events`: the most events a stream created by this PUT keeps (the
    /// oldest go first); `nil` if the request does not say.
    func maxEvents() throws -> Int? {
        guard let text = fields.value(.replayMaxEvents) else { return nil }
        guard text.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let count = Int(text) else {
            throw HTTPProblem.invalid("Replay-Max-Events takes a whole number of events, such as 10000")
        }
        return count
    }

    /// `Producer-Id`, `Producer-Epoch` and `Producer-Seq`: all three or none (§5.2.1).
    func producer() throws -> ProducerStamp? {
        let id = fields.value(.producerID)
        let epoch = fields.value(.producerEpoch)
        let seq = fields.value(.producerSeq)
        if id == nil, epoch == nil, seq == nil { return nil }
        guard let id, let epoch, let seq else {
            throw HTTPProblem.invalid("send Producer-Id, Producer-Epoch and Producer-Seq together, or none of them")
        }
        guard !id.isEmpty else { throw HTTPProblem.invalid("Producer-Id must not be empty") }
        guard let epochValue = Self.safeInteger(epoch) else {
            throw HTTPProblem.invalid("Producer-Epoch takes an integer from 0 to 2^53-1")
        }
        guard let seqValue = Self.safeInteger(seq) else {
            throw HTTPProblem.invalid("Producer-Seq takes an integer from 0 to 2^53-1")
        }
        return ProducerStamp(id: id, epoch: epochValue, sequence: seqValue)
    }

    /// `Stream-Forked-From`, `Stream-Fork-Offset` and `Stream-Fork-Sub-Offset`, checked (§4.2).
    func fork() throws -> ForkRequest? {
        let subOffsetText = fields.value(.streamForkSubOffset)
        guard let from = fields.value(.streamForkedFrom) else {
            if subOffsetText != nil { throw HTTPProblem.invalid("Stream-Fork-Sub-Offset needs Stream-Forked-From") }
            if fields.value(.streamForkOffset) != nil { throw HTTPProblem.invalid("Stream-Fork-Offset needs Stream-Forked-From") }
            return nil
        }
        let prefix = StreamEndpoint.prefix
        let path = from.hasPrefix(prefix) ? String(from.dropFirst(prefix.count)) : from
        guard let source = try? StreamPath.name(path) else {
            throw HTTPProblem.invalid("Stream-Forked-From takes the path of a stream of this server, such as \(prefix)orders")
        }
        var sequence: UInt64?
        if let offset = fields.value(.streamForkOffset) {
            switch StreamOffset.parse(Substring(offset)) {
            case .start: sequence = 0
            case .now: sequence = nil
            case .after(let value): sequence = value
            case nil, .snapshot: throw HTTPProblem.invalid("Stream-Fork-Offset takes an offset this server returned")
            }
        }
        var subOffset: UInt64 = 0
        if let subOffsetText {
            guard let value = Self.safeInteger(subOffsetText) else {
                throw HTTPProblem.invalid("Stream-Fork-Sub-Offset takes a non-negative integer")
            }
            subOffset = value
            if value > 0, fields.value(.streamForkOffset) == nil {
                throw HTTPProblem.invalid("Stream-Fork-Sub-Offset needs Stream-Fork-Offset")
            }
        }
        return ForkRequest(source: source, sequence: sequence, subOffset: subOffset)
    }

    /// A decimal integer from 0 to 2^53-1, the range JavaScript clients can count in.
    static func safeInteger(_ text: String) -> UInt64? {
        guard !text.isEmpty, text.utf8.count <= 16, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
            let value = UInt64(text), value <= (1 << 53) - 1
        else { return nil }
        return value
    }
}

extension HTTPFields {
    /// `self[name]`, the value of the field or of all the fields of that name joined, without
    /// building a new string for the usual one field: the subscript joins even one value
    /// into a new string, and a POST looks up about eight fields (a sixth of the extra CPU
    /// an idempotent producer's POST cost in a profile).
    func value(_ name: HTTPField.Name) -> String? {
        guard let first = firstIndex(where: { $0.name == name }) else { return nil }
        guard !self[index(after: first)...].contains(where: { $0.name == name }) else { return self[name] }
        return self[first].value
    }
}
