import Foundation

/// Where a durable consumer or a consumer group starts on its first use, decided by the
/// writer in the order of the requests: a position from the stream's bounds, or the first
/// event stored at or after a time, looked up inside the writer's transaction. So a
/// `since=` start sees every event an earlier command committed and none a later one did,
/// as every other start does.
public enum FirstPosition: Sendable {
    case next(@Sendable (StreamInfo) -> UInt64)
    case since(Date)
}
