import ReplayCore
import ReplaySync

/// Records what happens, by whom, at which virtual time: the output of an example of the
/// articles, in a form a test compares with one `#expect`.
public final class Timeline: Sendable {
    /// One line of the timeline: at `time`, `who` saw or did `what`.
    public struct Record: Equatable, Sendable, CustomStringConvertible {
        public let time: Double
        public let who: String
        public let what: String

        public init(_ time: Double, _ who: String, _ what: String) {
            // Milliseconds: virtual times are sums of decimal fractions.
            self.time = (time * 1000).rounded() / 1000
            self.who = who
            self.what = what
        }

        public var description: String { "\(time) \(who): \(what)" }
    }

    public let scheduler: TestScheduler
    private let records = Locked<[Record]>([])

    public init(scheduler: TestScheduler = TestScheduler()) {
        self.scheduler = scheduler
    }

    /// Notes that `who` did `what` now.
    public func log(_ who: String, _ what: String) {
        let record = Record(scheduler.elapsed, who, what)
        records.withLock { $0.append(record) }
    }

    /// An observer that logs every event it receives under `who`.
    public func observer<Value: Sendable>(_ who: String) -> Observer<Value> {
        Observer { event in
            switch event {
            case .value(let value): self.log(who, "\(value)")
            case .completed: self.log(who, "completed")
            case .failed(let error): self.log(who, "failed: \(error)")
            }
        }
    }

    /// Everything recorded, in order.
    public var all: [Record] { records.withLock { $0 } }

    /// What `who` recorded, in order.
    public func of(_ who: String) -> [Record] { all.filter { $0.who == who } }

    /// The values `who` received, without times.
    public func values(of who: String) -> [String] {
        of(who).map(\.what).filter { $0 != "completed" && !$0.hasPrefix("failed") }
    }
}
