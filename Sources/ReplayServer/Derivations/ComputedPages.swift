import Foundation
import ReplayDerive
import ReplayStore

/// A derivation's next page of input events and, for a stateless program's page worth
/// sharing, each event's outputs computed by the runner and its `ComputeHelper`; in a
/// catch-up, with the page after it already read and handed to the helper.
///
/// Why read ahead: reading a page from the store is a fifth of the runner's work in a
/// catch-up, and feeding the outputs to the engine a tenth, both on the runner alone; the
/// helper sat idle through them, half the runner's time. Now the runner reads page N+1
/// and submits it before it finishes page N, so the helper computes N's last chunks and
/// then N+1's while the runner feeds N. The page read ahead is taken only if the step
/// before it ended at its end (the positions it was read after are the derivation's) and
/// the inputs are the same streams; otherwise it is dropped and read again, so what is
/// computed is what reading then would have given.
///
/// Not `Sendable`: the runner's own, on its thread.
struct ComputedPages {
    typealias Computed = ComputeHelper.Computed

    private let program: String
    private let budget: JQProgram.Budget
    /// Made at the first page worth sharing.
    private var helper: ComputeHelper?
    /// The page after the last one handed out, read after `from` from `inputs`.
    private var ahead: (from: [String: UInt64], inputs: [String], page: ComputeHelper.Page)?

    /// The positions the page read ahead was read after, if there is one.
    var readAhead: [String: UInt64]? { ahead?.from }

    init(program: String, budget: JQProgram.Budget) {
        self.program = program
        self.budget = budget
    }

    /// The events after `positions` in `inputs` (`reader.streams()`), and their outputs
    /// if they were computed here (`compute` is the runner's share of the work); `nil`:
    /// the caller computes them, one by one.
    mutating func next(
        _ reader: InputReader, _ inputs: [StreamInfo], after positions: [String: UInt64], stateless: Bool,
        compute: (InputEvent) -> Computed
    ) throws(StoreError) -> (events: [InputEvent], computed: [Computed]?) {
        let names = inputs.map(\.name)
        var page: ComputeHelper.Page?
        if let ahead {
            self.ahead = nil
            if ahead.from == positions, ahead.inputs == names { page = ahead.page } else { helper?.discard(ahead.page) }
        }
        if page == nil {
            let events = try reader.next(after: positions, in: inputs)
            guard stateless, ComputeHelper.isUseful, events.count >= ComputeHelper.minimumEvents else { return (events, nil) }
            if helper == nil { helper = ComputeHelper(program: program, budget: budget) }
            page = helper!.submit(events)
        }
        let current = page!
        readAhead(reader, after: Self.positions(after: current.events, from: positions))
        return (current.events, helper!.finish(current, compute))
    }

    /// Reads the page after `positions` and submits it, if it is one worth sharing (a
    /// catch-up's). A failed read is left to the next step, which reads again.
    private mutating func readAhead(_ reader: InputReader, after positions: [String: UInt64]) {
        // The inputs as they are now, as the step that takes it would see them.
        let inputs = reader.streams()
        guard let events = try? reader.next(after: positions, in: inputs), events.count >= ComputeHelper.minimumEvents else { return }
        ahead = (positions, inputs.map(\.name), helper!.submit(events))
    }

    /// Where a derivation stands once every event of `events`, read after `positions`, is
    /// computed.
    static func positions(after events: some Sequence<InputEvent>, from positions: [String: UInt64]) -> [String: UInt64] {
        var end = positions
        for event in events { end[event.stream] = event.sequence }
        return end
    }

    /// Ends the helper's thread (the runner ended).
    func retire() {
        helper?.retire()
    }
}
