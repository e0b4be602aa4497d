/// Events committed after a reader's position, on a stream whose last event is `last`: the
/// lag every view shows, of a durable consumer, a consumer group, a subscription's link
/// or a derivation's input. A position past the end (a stream reset under its reader) is
/// no lag, never an underflow.
public func lag(last: UInt64, position: UInt64) -> UInt64 {
    last > position ? last - position : 0
}
