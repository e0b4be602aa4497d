import Foundation
import ReplayDerive

/// A second thread for a derivation whose events are computed each on its own (map,
/// filter, flattenMap: `DerivationEngine.isStateless`). In a catch-up the runner hands it
/// pages of input events, and the two share each page chunk by chunk, each running its own
/// copy of the program; the runner then feeds every event's outputs to the engine in input
/// order, so skip, take, distinct and the error policy see exactly what one thread would
/// have given them.
///
/// Why: jq is most of a derivation's work (its parse, run and print of each event were
/// three quarters of the runner's thread in a profile of a catch-up), so one thread made
/// the runner, not the writer, the bound of a catch-up, with the second core half idle.
/// Pages are handed over ahead (`submit`) so that the helper computes the next page while
/// the runner reads the store and feeds the page before: with one page at a time, the
/// helper sat idle through both, a third of the runner's time. Chunks taken in turn rather
/// than halves: the writer takes a core now and then, and whichever thread it slows takes
/// fewer chunks instead of holding the other up. A jq interpreter is confined to its
/// thread (`JQProgram`), so the helper compiles its own, on its own thread, and only bytes
/// cross between the two.
///
/// `@unchecked Sendable`: what the two threads share is guarded by `condition`, but for
/// the results' slots, each written by the one thread that took its chunk and read by the
/// runner once no chunk of the page is left or under way (the lock orders the two).
final class ComputeHelper: @unchecked Sendable {
    typealias Computed = Result<[Data], JQProgram.Failure>

    /// Fewer events than this are computed by the runner alone: a live derivation's
    /// handful per wake-up would wait longer for the hand-over than it saves.
    static let minimumEvents = 64
    /// Events taken at a time: a fraction of a millisecond of jq's work.
    static let chunk = 64

    /// Whether a second thread helps at all: not on one core.
    static var isUseful: Bool { ProcessInfo.processInfo.activeProcessorCount > 1 }

    /// A page handed to the helper: its events, and their results as the two threads
    /// compute them. Read only through `results(of:_:)`.
    final class Page {
        let events: [InputEvent]
        fileprivate let results: UnsafeMutableBufferPointer<Computed?>
        /// The first event no thread took yet.
        fileprivate var next = 0
        /// Whether the helper is inside one of its chunks.
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
    /// Pages handed over with chunks left, oldest first: the helper works on the oldest,
    /// which the runner needs first.
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

    /// Hands `events` to the helper, which starts on them once the pages before are done.
    func submit(_ events: [InputEvent]) -> Page {
        let page = Page(events)
        condition.lock()
        pages.append(page)
        condition.broadcast()
        condition.unlock()
        return page
    }

    /// Every event's outputs of a submitted page, in order: the chunks the helper has not
    /// taken yet are computed by `compute` on the calling thread.
    func results(of page: Page, _ compute: (InputEvent) -> Computed) -> [Computed] {
        condition.lock()
        while let range = take(from: page) {
            condition.unlock()
            for index in range { page.results[index] = compute(page.events[index]) }
            condition.lock()
        }
        // Every chunk is taken; the helper may still be computing its last.
        while page.helping { condition.wait() }
        condition.unlock()
        return page.results.map { $0! }
    }

    /// `submit`, then `results`: a page computed by both threads now.
    func computeAll(_ events: [InputEvent], _ compute: (InputEvent) -> Computed) -> [Computed] {
        results(of: submit(events), compute)
    }

    /// A submitted page that will not be read (the step before it ended early): the
    /// helper takes no more of its chunks.
    func withdraw(_ page: Page) {
        condition.lock()
        page.next = page.events.count
        pages.removeAll { $0 === page }
        condition.unlock()
    }

    /// Ends the thread (its runner ended).
    func retire() {
        condition.lock()
        retired = true
        condition.broadcast()
        condition.unlock()
    }

    /// The next chunk of `page` for the caller, under the lock; `nil` once all are taken
    /// (the page then leaves the helper's queue).
    private func take(from page: Page) -> Range<Int>? {
        guard page.next < page.events.count else { return nil }
        let range = page.next..<min(page.next + Self.chunk, page.events.count)
        page.next = range.upperBound
        if page.next == page.events.count { pages.removeAll { $0 === page } }
        return range
    }

    private func run() {
        // Only a failure to start jq fails here, since the runner's copy compiled: the
        // runner then takes every chunk itself.
        guard let compiled = try? JQProgram(program, budget: budget) else { return }
        condition.lock()
        defer { condition.unlock() }
        while !retired {
            guard let page = pages.first, let range = take(from: page) else {
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
