import HTTPTypes

/// The head of an HTTP/1.1 POST read from a connection's bytes, for the appends the door
/// answers without NIO's HTTP codec (`FramedAppendHandler`).
///
/// Why by hand: NIO's decoder makes a string of every field and of the URI and a head to
/// hold them, which the conversion to swift-http-types then copies field by field; for a
/// POST that is most of what its read costs (docs/PERFORMANCE.md, "The floors under a
/// POST"). This reads only what it must and reads it strictly: anything else (another
/// method or version, a `Transfer-Encoding`, a `Content-Length` given twice or not at all,
/// a line folded or ended by a bare LF, a byte outside visible ASCII, a head longer than
/// `maxLength`) is `unsupported`, and the request is left, from its first byte, to NIO's
/// decoder, which reads every request the door does not answer. So the two never read the
/// same bytes differently: a request is framed here only when it is framed by nothing but
/// its one `Content-Length`.
struct FramedRequestHead {
    /// The request target, as sent (the path and any query).
    let target: String
    /// The `Host` field's value, which swift-http-types carries as the authority.
    let authority: String?
    /// Every field but `Host`, in order.
    let fields: HTTPFields
    /// The body's length.
    let contentLength: Int
    /// The head's length in bytes, its blank line included: where the body starts.
    let length: Int

    enum Scan {
        /// The head has not all arrived.
        case incomplete
        /// Not a request read here: NIO's decoder reads it.
        case unsupported
        case head(FramedRequestHead)
    }

    /// The most fields a head read here may have.
    static let maxFields = 64
    private static let versionSuffix = Array(" HTTP/1.1".utf8)
    /// swift-http-types makes `Host` unavailable as a field: it is the request's authority.
    private static let hostName = HTTPField.Name("Host")!

    /// Reads the head at the start of `bytes`.
    /// - Parameter searched: how many of `bytes` an earlier scan found `incomplete` (a head
    ///   arriving in several reads): its end is looked for after them.
    static func scan(_ bytes: UnsafeRawBufferPointer, maxLength: Int, searched: Int = 0) -> Scan {
        let prefix = "POST /".utf8
        for (index, byte) in prefix.enumerated() where index < bytes.count {
            if bytes[index] != byte { return .unsupported }
        }
        guard let end = headEnd(bytes, within: maxLength, from: searched) else {
            return bytes.count >= maxLength ? .unsupported : .incomplete
        }
        return read(UnsafeRawBufferPointer(rebasing: bytes[0..<end])).map { .head($0) } ?? .unsupported
    }

    /// Where the blank line that ends the head ends, if it is within `maxLength` bytes and
    /// ends at or after `start`.
    private static func headEnd(_ bytes: UnsafeRawBufferPointer, within maxLength: Int, from start: Int) -> Int? {
        let limit = min(bytes.count, maxLength)
        var index = max(3, start)
        while index < limit {
            if bytes[index] == .lf, bytes[index - 1] == .cr, bytes[index - 2] == .lf, bytes[index - 3] == .cr { return index + 1 }
            index += 1
        }
        return nil
    }

    /// The head in `bytes`, which end with its blank line.
    private static func read(_ bytes: UnsafeRawBufferPointer) -> FramedRequestHead? {
        var lines = Lines(bytes: bytes)
        // The request line: `POST <target> HTTP/1.1`.
        guard let requestLine = lines.next(), requestLine.count > 15 else { return nil }
        guard requestLine.suffix(9).elementsEqual(versionSuffix) else { return nil }
        let target = requestLine[(requestLine.startIndex + 5)..<(requestLine.endIndex - 9)]
        guard target.allSatisfy(\.isVisible) else { return nil }
        var fields = HTTPFields()
        // Room for every line but the request line and the blank one: grown one field at a
        // time, the list was reallocated at every doubling (three times for three fields).
        fields.reserveCapacity(bytes.reduce(0) { $1 == .lf ? $0 + 1 : $0 } - 2)
        var authority: String?
        var contentLength: Int?
        var count = 0
        while let line = lines.next() {
            if line.isEmpty { break }
            count += 1
            guard count <= maxFields, let colon = line.firstIndex(of: .colon), colon > line.startIndex else { return nil }
            let rawName = line[line.startIndex..<colon]
            guard rawName.allSatisfy(\.isTokenCharacter) else { return nil }
            var value = line[(colon + 1)...]
            while let first = value.first, first == .space || first == .tab { value = value.dropFirst() }
            while let last = value.last, last == .space || last == .tab { value = value.dropLast() }
            guard value.allSatisfy({ $0.isVisible || $0 == .space || $0 == .tab }) else { return nil }
            let text = String(decoding: value, as: UTF8.self)
            guard let fieldName = knownName(rawName) ?? HTTPField.Name(String(decoding: rawName, as: UTF8.self)) else { return nil }
            switch fieldName {
            case .transferEncoding:
                return nil
            case .contentLength:
                guard contentLength == nil, (1...18).contains(value.count), value.allSatisfy(\.isDigit) else { return nil }
                contentLength = Int(text)
                fields.append(HTTPField(name: fieldName, value: text))
            case hostName:
                guard authority == nil else { return nil }
                authority = text
            default:
                fields.append(HTTPField(name: fieldName, value: text))
            }
        }
        guard let contentLength, lines.atEnd else { return nil }
        return FramedRequestHead(
            target: String(decoding: target, as: UTF8.self), authority: authority, fields: fields, contentLength: contentLength,
            length: bytes.count)
    }

    /// The names a POST's head usually carries, each with its lowercase bytes: one of them
    /// is found without a string of the name and its lowercased copy, which
    /// `HTTPField.Name(_:)` makes (a name's string and checks were a fifth of the head's
    /// reading). The name found keeps the table's spelling, which lookups ignore.
    private static let knownNames: [(bytes: [UInt8], name: HTTPField.Name)] = [
        .contentType, .contentLength, hostName, .transferEncoding, .connection, .expect, .userAgent, .accept,
        .acceptEncoding, .origin, .authorization, .producerID, .producerEpoch, .producerSeq, .streamClosed, .streamSeq,
        .replayKey, .replayDelay, .replayAt, .replayEventTTL, .replayTraceparent, .traceparent,
    ].map { (Array($0.canonicalName.utf8), $0) }

    private static func knownName(_ raw: Slice<UnsafeRawBufferPointer>) -> HTTPField.Name? {
        for known in knownNames where known.bytes.count == raw.count {
            if zip(known.bytes, raw).allSatisfy({ $0 == $1.lowercased }) { return known.name }
        }
        return nil
    }

    /// The head's lines, each without its CRLF; a bare CR or LF ends the reading (`nil`).
    private struct Lines {
        let bytes: UnsafeRawBufferPointer
        var position = 0
        private(set) var failed = false

        init(bytes: UnsafeRawBufferPointer) {
            self.bytes = bytes
        }

        var atEnd: Bool { !failed && position == bytes.count }

        mutating func next() -> Slice<UnsafeRawBufferPointer>? {
            guard !failed, position < bytes.count else { return nil }
            var index = position
            while index < bytes.count, bytes[index] != .cr, bytes[index] != .lf { index += 1 }
            guard index + 1 < bytes.count, bytes[index] == .cr, bytes[index + 1] == .lf else {
                failed = true
                return nil
            }
            defer { position = index + 2 }
            return bytes[position..<index]
        }
    }
}

extension UInt8 {
    fileprivate static let cr = UInt8(ascii: "\r")
    fileprivate static let lf = UInt8(ascii: "\n")
    fileprivate static let space = UInt8(ascii: " ")
    fileprivate static let tab = UInt8(ascii: "\t")
    fileprivate static let colon = UInt8(ascii: ":")

    /// Visible ASCII (RFC 9110's VCHAR).
    fileprivate var isVisible: Bool { (0x21...0x7E).contains(self) }
    fileprivate var isDigit: Bool { (0x30...0x39).contains(self) }
    fileprivate var lowercased: UInt8 { (0x41...0x5A).contains(self) ? self | 0x20 : self }

    /// RFC 9110's `tchar`.
    fileprivate var isTokenCharacter: Bool {
        switch self {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
            UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
            UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            true
        default: false
        }
    }
}
