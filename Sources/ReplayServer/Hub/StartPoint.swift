/// Where a new subscription begins: `next`, the first sequence number it wants, and
/// `liveAfter`, the stream's last sequence number when it subscribed. Events up to
/// `liveAfter` are history, replayed only while retained; later ones are live.
struct StartPoint: Sendable, Equatable {
    var next: UInt64
    var liveAfter: UInt64
}
