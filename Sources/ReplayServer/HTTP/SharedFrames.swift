import NIOCore

/// The SSE chunks that a turn of one event loop's parked readers framed (`ReaderTurns`),
/// for the next reader of the same events: readers of one stream that were up to date all
/// wake at its commit, each at the same position, and each would frame the same events
/// into the same text. The first frames them; the rest write its buffer (a `ByteBuffer`
/// is shared, not copied) and move past them.
///
/// A frame is another reader's only while it would read exactly the same: the same stream
/// (its hub), from the same position, with no commit applied since (`StreamHub.sharedVersion`,
/// which is `nil` while an event in the tail ring may expire meanwhile), framed the same way
/// (`Key`), and up to date, so that it reaches the stream's last event. A reader with a
/// filter or keys frames its own (`HTTPCursor.sharesChunks`), as does a chunk that names
/// traced or keyed events, or ends the stream. The frames go when the loop has no reader
/// left due, so they hold memory only during a burst of commits.
struct SharedFrames {
    /// How a frame's text was made, beyond the events in it.
    struct Key: Equatable {
        let encoding: SSEFrame.Encoding
        /// The `control` event's `streamCursor`.
        let streamCursor: UInt64
        /// Framed as an HTTP/1.1 chunk (`HTTPChunk`).
        let asHTTPChunk: Bool
    }

    struct Frame {
        let hub: StreamHub
        let key: Key
        /// The events after `after`, through `through`.
        let after: UInt64
        let through: UInt64
        /// The hub's `sharedVersion` before the events were read.
        let version: UInt64
        let buffer: ByteBuffer
        /// What a reader that writes it delivers, for the metrics.
        let events: Int
        let bytes: Int
    }

    private var frames: [ObjectIdentifier: Frame] = [:]

    /// The frame a reader of `hub` at `after` would make, if one was made.
    func frame(of hub: StreamHub, after: UInt64, key: Key, version: UInt64) -> Frame? {
        guard let frame = frames[ObjectIdentifier(hub)], frame.hub === hub, frame.after == after, frame.version == version, frame.key == key
        else { return nil }
        return frame
    }

    /// Keeps `frame` for the next reader at its position, in place of the stream's last.
    mutating func keep(_ frame: Frame) {
        frames[ObjectIdentifier(frame.hub)] = frame
    }
}
