import Foundation
import ReplayDerive

/// A read-time filter (`SUB … filter=`, `?filter=`): a jq program run on each event on its
/// way to one reader, with nothing stored. Cold per reader, on purpose: where a derived
/// stream is not worth keeping, each reader pays for its own projection.
///
/// The same program rules as a derivation's (`ProgramVetting`). An event the program fails
/// on is not delivered, as if it had selected nothing: a reader is not the place to stop or
/// dead-letter (a derivation is). Used by one reader, from its reader-pool thread for
/// stored pages and from its task for live events, one at a time: the lock makes that
/// hand-over explicit for jq's thread-confined state (see `JQProgram`). An `NSLock`, not
/// the project's `Locked`, whose rule is that nothing runs under it: the program does.
final class EventFilter: @unchecked Sendable {
    private let program: JQProgram
    private let lock = NSLock()

    /// Compiles `source`; a refusal says why, as a derivation's would.
    init(_ source: String, budget: JQProgram.Budget) throws(JQProgram.Failure) {
        program = try JQProgram(source, budget: budget)
    }

    /// The program's outputs for one event's payload (none if it failed on it, or passed
    /// its budget: a reader's filter is cut off as a derivation's is).
    func outputs(_ payload: some ContiguousBytes) -> [Data] {
        lock.withLock { (try? program.run(json: payload)) ?? [] }
    }
}
