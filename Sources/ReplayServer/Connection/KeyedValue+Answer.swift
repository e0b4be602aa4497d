import ReplayModel
import ReplayProtocol
import ReplayStore

extension KeyedValue {
    /// `GET`'s answer from the key's newest retained event: the value, or `unknown_key`
    /// when there is none or it is a tombstone (an empty payload: the key was deleted).
    static func answer(_ event: StoredEvent?, stream: String, key: EventKey) throws(ReplayError) -> KeyedValue {
        guard let event else { throw ReplayError(.unknownKey, "no retained event of stream '\(stream)' has key '\(key)'") }
        guard !event.payload.isEmpty else {
            throw ReplayError(.unknownKey, "key '\(key)' of stream '\(stream)' was deleted (a tombstone at seq \(event.sequence))")
        }
        return KeyedValue(stream: stream, key: key.text, seq: event.sequence, time: event.timestamp, payload: event.payload)
    }
}
