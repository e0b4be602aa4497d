/// The reply to BACKUP: where the copy is, how large, how long it took, and each stream
/// it holds with its last sequence number (what a restore from it serves).
public struct BackupDescription: Codable, Sendable, Equatable {
    public struct Stream: Codable, Sendable, Equatable {
        public var stream: String
        public var last: UInt64

        public init(stream: String, last: UInt64) {
            self.stream = stream
            self.last = last
        }
    }

    public var path: String
    public var bytes: Int
    public var seconds: Double
    public var streams: [Stream]

    public init(path: String, bytes: Int, seconds: Double, streams: [Stream]) {
        self.path = path
        self.bytes = bytes
        self.seconds = seconds
        self.streams = streams
    }
}
