import Foundation
import ReplayDerive

/// A second thread for a derivation whose events are computed each on its own (map,
/// filter, flattenMap: `DerivationEngine.isStateless`). In a catch-up the runner and its
/// helper share each page of input events, chunk by chunk, each running its own copy of
/// the program; the runner then feeds every event's outputs to the engine in input order,
/// so skip, take, distinct and the error policy see exactly what one thread would have
/// given them.
///
/// Why: jq is most of a derivation's work (its parse, run and print of each event were
/// three quarters of the runner's thread in a profile of a catch-up), so one thread made
/// the runner, not the writer, the bound of a catch-up, with the second core half idle.
/// Chunks taken in turn rather than halves: the writer takes a core now and then, and
/// whichever thread it slows takes fewer chunks instead of holding the other up. A jq
/// interpreter is confined to its thread (`JQProgram`), so the helper compiles its own,
/// on its own thread, and only bytes cross between the two.
///
/// Pages queue up: the runner may submit the next page (`ComputedPages`) before it finishes
/// the one before, so that the helper goes on to it while the runner reads and feeds,
/// which it does alone. The helper takes chunks from the oldest page with any left.
///
/// `@unchecked Sendable`: what the two threads share is guarded by `condition`, but for
/// the results' slots, each written by the one thread that took its chunk and read by the
/// runner once both are done with the page (the lock orders the two).
final class ComputeHelper: @unchecked Sendable {
    typealias Computed = Result<[Data], JQProgram.Failure>

    /// Fewer events than this are computed by the runner alone: a live derivation's
    /// handful per wake-up would wait longer for the hand-over than it saves.
    static let minimumEvents = 64
    /// Events taken at a time: a fraction of a millisecond of jq's work.
    static let chunk = 64

    /// Whether a second thread helps at all: not on one core. Asked once: the count is
    /// read from the system each time (a tenth of a millisecond).
    static let isUseful = ProcessInfo.processInfo.activeProcessorCount > 1

    /// One page shared by the two threads; its fields but `events` are guarded by the
    /// helper's `condition`.
    final class Page {
        let events: [InputEvent]
        fileprivate let results: UnsafeMutableBufferPointer<Computed?>
        /// The first event no thread took yet.
        fileprivate var next = 0
        /// Whether the helper is inside a chunk of it.
        fileprivate var helping = false

        fileprivate init(_ events: [InputEvent]) {
            self.events = events
            results = .allocate(capacity: events.count)
            results.initialize(repeating: nil)
        }

        deinit {
            results.deinitialize()
            results.deallocate()
        }
    }

    private let program: String
    private let budget: JQProgram.Budget
    private let condition = NSCondition()
    /// Submitted and not yet finished or discarded, oldest first.
    private var pages: [Page] = []
    private var retired = false
    private var chunksHelped = 0

    /// Chunks the helper computed, since it started (a test's proof that it helps).
    var helped: Int {
        condition.lock()
        defer { condition.unlock() }
        return chunksHelped
    }

    init(program: String, budget: JQProgram.Budget) {
        self.program = program
        self.budget = budget
        let thread = Thread { [self] in run() }
        thread.name = "replay.derive-helper"
        thread.start()
    }

    /// Queues `events` for the helper, behind the pages already submitted.
    func submit(_ events: [InputEvent]) -> Page {
        let page = Page(events)
        condition.lock()
        pages.append(page)
        condition.broadcast()
        condition.unlock()
        return page
    }

    /// A submitted page's outputs, in order: the calling thread computes the chunks still
    /// untaken with `compute`, then waits for the helper's last.
    func finish(_ page: Page, _ compute: (InputEvent) -> Computed) -> [Computed] {
        condition.lock()
        while let range = take(from: page) {
            condition.unlock()
            for index in range { page.results[index] = compute(page.events[index]) }
            condition.lock()
        }
        while page.helping { condition.wait() }
        pages.removeAll { $0 === page }
        condition.unlock()
        return page.results.map { $0! }
    }

    /// Drops a submitted page (the step before it ended elsewhere than its end): its
    /// chunks not taken yet are never computed. Returns once the helper is out of it.
    func discard(_ page: Page) {
        condition.lock()
        page.next = page.events.count
        while page.helping { condition.wait() }
        pages.removeAll { $0 === page }
        condition.unlock()
    }

    /// Ends the thread (its runner ended).
    func retire() {
        condition.lock()
        retired = true
        pages.removeAll()
        condition.broadcast()
        condition.unlock()
    }

    /// The next chunk of `page` for the caller, under the lock; `nil` once all are taken.
    private func take(from page: Page) -> Range<Int>? {
        guard page.next < page.events.count else { return nil }
        let range = page.next..<min(page.next + Self.chunk, page.events.count)
        page.next = range.upperBound
        return range
    }

    private func run() {
        // Only a failure to start jq fails here, since the runner's copy compiled: the
        // runner then takes every chunk itself.
        guard let compiled = try? JQProgram(program, budget: budget) else { return }
        condition.lock()
        defer { condition.unlock() }
        while !retired {
            guard let page = pages.first(where: { $0.next < $0.events.count }), let range = take(from: page) else {
                condition.wait()
                continue
            }
            page.helping = true
            condition.unlock()
            for index in range {
                page.results[index] = compiled.result(json: page.events[index].payload)
            }
            condition.lock()
            page.helping = false
            chunksHelped += 1
            condition.broadcast()
        }
    }
}
