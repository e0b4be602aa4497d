import ReplayProtocol
import Synchronization

/// The client's half of a windowed subscription: counts the events its consumer has
/// taken, and each time half a window is reached grants that many back to the daemon
/// (`MORE <sid> <n>`), so the daemon keeps at most a window in flight while the consumer
/// keeps up, and stops, for this subscription only, when it does not.
final class WindowCredit: Sendable {
    let window: Int
    private let taken = Atomic<Int>(0)
    private let grant: @Sendable (Int) -> Void

    init(window: Int, grant: @escaping @Sendable (Int) -> Void) {
        self.window = window
        self.grant = grant
    }

    /// The consumer took one event.
    func took() {
        let batch = max(1, window / 2)
        let now = taken.add(1, ordering: .relaxed).newValue
        guard now >= batch else { return }
        // One consumer takes events one at a time, so no other caller races this.
        taken.subtract(batch, ordering: .relaxed)
        grant(batch)
    }
}
