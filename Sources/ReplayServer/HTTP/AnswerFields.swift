import HTTPTypes

/// Where an answer's fields are put: swift-http-types' list, for the answers hummingbird
/// writes, or straight into the bytes of an HTTP/1.1 answer (`HTTP1AnswerBytes.Fields`),
/// for the POSTs the door answers itself. The fields of an answer are decided once, by
/// functions generic over this (`StreamEndpoint.addAppendedFields`,
/// `FrontDoorResponder.addHeaders`, `StreamInfo.addState`), so both ways carry the same.
///
/// Why: a framed POST's answer built as `HTTPFields` and then written out took a list and
/// its storage, a search of the list for every field set, and a check of every value, about
/// a tenth of what replay's own code spends on the POST (docs/PERFORMANCE.md).
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
