import Foundation
import ReplayDerive
import ReplayStore

/// A derivation's next page of input events and, for a stateless program's page worth
/// sharing, each event's outputs computed by the runner and its `ComputeHelper`; in a
/// catch-up, with the page after it already read, or being read.
///
/// Why read ahead: reading a page from the store is a fifth of a catch-up's work on the
/// runner's thread, whatever the program, and feeding the outputs to the engine a tenth.
/// A stateless program's helper sat idle through both; a scan (keyed or not), a window or
/// a combineLatest computes on the runner alone, which the read held up. So once a page of
/// a catch-up is handed out, the page after it is read: for a stateless program by the
/// runner, and submitted to the helper, which computes this page's last chunks and then
/// that one's while the runner feeds this one; otherwise on a thread of the system's pool
/// while the runner computes this one (`PageReadAhead`). The page read ahead is taken
/// only if the step before it ended at its end (the positions it was read after are the
/// derivation's) and the inputs are the same streams; otherwise it is dropped and read
/// again, so what is computed is what reading then would have given.
///
/// Not `Sendable`: the runner's own, on its thread.
struct ComputedPages {
    typealias Computed = ComputeHelper.Computed

    private let program: String
    private let budget: JQProgram.Budget
    /// Made at the first page worth sharing.
    private var helper: ComputeHelper?
    /// The page after the last one handed out, being read after `from`.
    private var ahead: (from: [String: UInt64], read: PageReadAhead)?

    /// The positions the page read ahead was read after, if it holds events (waits for the
    /// read).
    var readAhead: [String: UInt64]? {
        guard let ahead, let page = ahead.read.wait(), !page.events.isEmpty else { return nil }
        return ahead.from
    }

    init(program: String, budget: JQProgram.Budget) {
        self.program = program
        self.budget = budget
    }

    /// A page handed out.
    struct Page {
        let events: [InputEvent]
        /// Each event's outputs, if computed here; `nil`: the caller computes them, one by one.
        let computed: [Computed]?
        /// Where the derivation stands once every event is computed, if worked out here
        /// (for the read ahead).
        let end: [String: UInt64]?
    }

    /// The events after `positions` in `inputs` (`reader.streams()`), and their outputs
    /// if they were computed here (`compute` is the runner's share of a stateless
    /// program's work).
    mutating func next(
        _ reader: InputReader, _ inputs: [StreamInfo], after positions: [String: UInt64], stateless: Bool,
        compute: (InputEvent) -> Computed
    ) throws(StoreError) -> Page {
        let shares = stateless && ComputeHelper.isUseful
        let events: [InputEvent]
        var shared: ComputeHelper.Page?
        if let page = takeReadAhead(after: positions, inputs: inputs) {
            events = page.events
            shared = page.shared
        } else {
            events = try reader.next(after: positions, in: inputs)
            guard events.count >= ComputeHelper.minimumEvents else { return Page(events: events, computed: nil, end: nil) }
            if shares { shared = sharing().submit(events) }
        }
        var end: [String: UInt64]?
        if events.count >= ComputeHelper.minimumEvents {
            let after = Self.positions(after: events, from: positions)
            end = after
            ahead = (after, PageReadAhead(reader, after: after, helper: shares ? sharing() : nil))
        }
        let computed = shared.map { sharing().finish($0, compute) }
        return Page(events: events, computed: computed, end: end)
    }

    /// The page read ahead, if it was read where this step begins and over the same
    /// streams; otherwise dropped, with what the helper was computing of it.
    private mutating func takeReadAhead(after positions: [String: UInt64], inputs: [StreamInfo]) -> PageReadAhead.Page? {
        guard let ahead else { return nil }
        self.ahead = nil
        let page = ahead.read.wait()
        if ahead.from == positions, let page, page.inputs == inputs.map(\.name) { return page }
        if let shared = page?.shared { helper?.discard(shared) }
        return nil
    }

    /// The helper, made at its first page.
    private mutating func sharing() -> ComputeHelper {
        if let helper { return helper }
        let made = ComputeHelper(program: program, budget: budget)
        helper = made
        return made
    }

    /// Where a derivation stands once every event of `events`, read after `positions`, is
    /// computed.
    static func positions(after events: some Sequence<InputEvent>, from positions: [String: UInt64]) -> [String: UInt64] {
        var end = positions
        // Set once per run of one stream's events rather than per event: a page is mostly
        // long runs (one input's, all of it), and hashing the name at every event was a
        // fiftieth of a keyed scan's runner. Names compare by their shared storage first.
        var run: (stream: String, sequence: UInt64)?
        for event in events {
            if let current = run, current.stream != event.stream { end[current.stream] = current.sequence }
            run = (event.stream, event.sequence)
        }
        if let run { end[run.stream] = run.sequence }
        return end
    }

    /// Ends the helper's thread (the runner ended), once the page being read is read.
    func retire() {
        _ = ahead?.read.wait()
        helper?.retire()
    }
}
