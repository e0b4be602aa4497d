import HTTPTypes

/// Where an answer's fields are put: swift-http-types' list, for the answers hummingbird
/// and NIO's encoder write, or straight into the bytes of an HTTP/1.1 answer
/// (`HTTP1AnswerBytes.Fields`), for the POSTs the door frames itself. The fields of an
/// answer are decided once, by functions generic over this
/// (`StreamEndpoint.addAppendedFields`, `FrontDoorResponder.addHeaders`,
/// `StreamInfo.addState`), so both ways carry the same.
///
/// Why: a framed POST's answer built as `HTTPFields` and then written out (a list and its
/// storage, a search of the list at every field set, a check of every value) took 3.5 µs of
/// the 30 a POST spends on the event loops; written as they are set, 1.9
/// (docs/PERFORMANCE.md, "HTTP appends").
protocol AnswerFields {
    /// Gives `name` the value `value`. Each answer sets a name once.
    mutating func set(_ name: HTTPField.Name, _ value: String)

    /// Gives `name` the offset after event `sequence` (`StreamOffset`), which every POST's
    /// answer carries: as its text, unless the answer can write it without one.
    mutating func setOffset(_ name: HTTPField.Name, after sequence: UInt64)
}

extension AnswerFields {
    mutating func setOffset(_ name: HTTPField.Name, after sequence: UInt64) {
        set(name, StreamOffset.text(after: sequence))
    }
}

extension HTTPFields: AnswerFields {
    mutating func set(_ name: HTTPField.Name, _ value: String) {
        self[name] = value
    }
}
