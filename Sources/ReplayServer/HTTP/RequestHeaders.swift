import Foundation
import Hummingbird
import ReplayModel
import ReplayStore

/// The Durable Streams headers of one request, parsed and checked: each malformed header
/// is a `400 Bad Request` that names it (Durable Streams PROTOCOL.md §5).
struct RequestHeaders {
    let fields: HTTPFields

    /// `Stream-Closed: true` (case-insensitive); any other value counts as absent (§4.1).
    var closes: Bool { fields[.streamClosed]?.lowercased() == "true" }

    /// The media type, lowercased, without parameters (`application/json; charset=utf-8`
    /// is `application/json`): what content types are compared by.
    static func mediaType(_ contentType: String) -> String {
        contentType.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
    }

    var contentType: String? {
        fields[.contentType].map { Self.mediaType($0) }.flatMap { $0.isEmpty ? nil : $0 }
    }

    static let maxTTL = StreamConfig.maxTimeToLive

    /// `Stream-TTL` or `Stream-Expires-At`, at most one of them.
    func expiry() throws -> StreamExpiry? {
        let ttl = fields[.streamTTL]
        let expiresAt = fields[.streamExpiresAt]
        if ttl != nil, expiresAt != nil {
            throw HTTPError(.badRequest, message: "send Stream-TTL or Stream-Expires-At, not both")
        }
        if let ttl {
            // A non-negative decimal integer without sign, leading zeros, point or exponent.
            guard !ttl.isEmpty, ttl.utf8.allSatisfy({ (0x30...0x39).contains($0) }), ttl == "0" || !ttl.hasPrefix("0"),
                let seconds = Int(ttl), seconds <= Self.maxTTL
            else { throw HTTPError(.badRequest, message: "Stream-TTL takes whole seconds from 0 to \(Self.maxTTL), such as 3600") }
            return .idle(seconds: seconds)
        }
        if let expiresAt {
            guard let date = Self.rfc3339(expiresAt) else {
                throw HTTPError(.badRequest, message: "Stream-Expires-At takes an RFC 3339 time, such as 2026-11-23T12:00:00Z")
            }
            return .at(date)
        }
        return nil
    }

    static func rfc3339(_ text: String) -> Date? {
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let plain = ISO8601DateFormatter()
        plain.formatOptions = [.withInternetDateTime]
        return fractional.date(from: text) ?? plain.date(from: text)
    }

    /// `Producer-Id`, `Producer-Epoch` and `Producer-Seq`: all three or none (§5.2.1).
    func producer() throws -> ProducerStamp? {
        let id = fields[.producerID]
        let epoch = fields[.producerEpoch]
        let seq = fields[.producerSeq]
        if id == nil, epoch == nil, seq == nil { return nil }
        guard let id, let epoch, let seq else {
            throw HTTPError(.badRequest, message: "send Producer-Id, Producer-Epoch and Producer-Seq together, or none of them")
        }
        guard !id.isEmpty else { throw HTTPError(.badRequest, message: "Producer-Id must not be empty") }
        guard let epochValue = Self.safeInteger(epoch) else {
            throw HTTPError(.badRequest, message: "Producer-Epoch takes an integer from 0 to 2^53-1")
        }
        guard let seqValue = Self.safeInteger(seq) else {
            throw HTTPError(.badRequest, message: "Producer-Seq takes an integer from 0 to 2^53-1")
        }
        return ProducerStamp(id: id, epoch: epochValue, sequence: seqValue)
    }

    /// A decimal integer from 0 to 2^53-1, the range JavaScript clients can count in.
    static func safeInteger(_ text: String) -> UInt64? {
        guard !text.isEmpty, text.utf8.count <= 16, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
            let value = UInt64(text), value <= (1 << 53) - 1
        else { return nil }
        return value
    }
}
