import Dispatch
import ReplayDerive

/// One page read ahead, and for a stateless program handed to the helper as soon as it is
/// read. A failed read is left to the step that wanted it, which reads again.
///
/// `@unchecked Sendable`: the page is written once by the reading thread before it
/// signals, and read by the runner only after it waited.
final class PageReadAhead: @unchecked Sendable {
    struct Page {
        /// The inputs as they were when it was read, as the step that takes it would see them.
        let inputs: [String]
        let events: [InputEvent]
        /// Submitted to the helper (`nil`: not shared).
        let shared: ComputeHelper.Page?
    }

    private let done = DispatchSemaphore(value: 0)
    private var page: Page?
    private var waited = false

    /// Reads the page after `positions`. With a `helper` (a stateless program's) the
    /// runner reads it itself, now, while the helper computes the page before: a third
    /// thread reading on two cores only took turns with the two computing (catch-ups of
    /// 500,000 events at 0.83–0.96× of the read on the runner). Without one the runner
    /// computes alone, and the page is read on the system's pool meanwhile.
    init(_ reader: InputReader, after positions: [String: UInt64], helper: ComputeHelper?) {
        if helper != nil {
            read(reader, after: positions, helper: helper)
        } else {
            DispatchQueue.global(qos: .userInitiated).async { [self] in read(reader, after: positions, helper: nil) }
        }
    }

    private func read(_ reader: InputReader, after positions: [String: UInt64], helper: ComputeHelper?) {
        let inputs = reader.streams()
        if let events = try? reader.next(after: positions, in: inputs), !events.isEmpty {
            let shared = events.count >= ComputeHelper.minimumEvents ? helper?.submit(events) : nil
            page = Page(inputs: inputs.map(\.name), events: events, shared: shared)
        }
        done.signal()
    }

    /// The page, once read; `nil` if the read failed or found nothing. Only the runner
    /// waits, and may ask again.
    func wait() -> Page? {
        if !waited {
            done.wait()
            waited = true
        }
        return page
    }
}
