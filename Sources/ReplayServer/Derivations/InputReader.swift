import Foundation
import ReplayDerive
import ReplayModel
import ReplayStore

/// Reads a derivation's inputs after its positions and puts their events in one order:
/// commit time, then the input's place in the definition (patterns' streams by name after
/// the named inputs), then sequence number. Recomputing from the same stored events gives
/// the same order, which is what a rebuild and a crash's redo rely on.
///
/// Each step reads at most `page` events of each input. An input whose page came back full
/// may have more: the merge stops at its last event, so an event read later never belongs
/// before one already taken.
struct InputReader {
    let store: EventStore
    let spec: DerivationSpec
    let derived: String
    /// A step is a commit, with its fsync: in a catch-up, pages of 1,024 left the runner
    /// waiting on the writer's fsyncs; a live derivation's pages are as small as ever.
    var page = 4096

    /// The streams read now: the named inputs that exist, the streams the patterns match
    /// (those created since included), and the takeUntil stream; all of them as one commit
    /// left them, since `next` reads each up to its last event here.
    func streams() -> [StreamInfo] {
        let named = spec.inputs.filter { !StreamPattern.isPattern($0) }
        let patterns = spec.inputs.compactMap { input -> StreamPattern? in
            guard StreamPattern.isPattern(input), case .success(let pattern) = StreamPattern.parse(input) else { return nil }
            return pattern
        }
        // One look at the catalog for every input: the whole list with a pattern, only the
        // names without.
        var found: [String: StreamInfo] = [:]
        var matched: [StreamInfo] = []
        if patterns.isEmpty {
            let names = named + (spec.takeUntil.map { [$0] } ?? [])
            for (name, info) in zip(names, store.infos(names)) { found[name] = info }
        } else {
            // A named input is taken by its name, the takeUntil stream by a pattern if one
            // matches it (then it is an input like the pattern's others).
            let wanted = Set(named)
            for info in store.streams {
                if wanted.contains(info.name) {
                    found[info.name] = info
                } else if !info.isSoftDeleted, info.name != derived, patterns.contains(where: { $0.matches(info.name) }) {
                    matched.append(info)
                } else if info.name == spec.takeUntil {
                    found[info.name] = info
                }
            }
        }
        var all: [StreamInfo] = []
        for input in named {
            if let info = found[input], !info.isSoftDeleted, !all.contains(where: { $0.name == input }) { all.append(info) }
        }
        all += matched.sorted { $0.name < $1.name }
        if let until = spec.takeUntil, !all.contains(where: { $0.name == until }), let info = found[until], !info.isSoftDeleted {
            all.append(info)
        }
        return all
    }

    /// The next events to compute, in order, after `positions`. Blocking (reads the store).
    func next(after positions: [String: UInt64], in inputs: [StreamInfo]) throws(StoreError) -> [InputEvent] {
        var pages: [(order: Int, events: [InputEvent], full: Bool)] = []
        for (order, info) in inputs.enumerated() {
            // Retention may have trimmed what was not read yet: go on from what is kept.
            let from = max((positions[info.name] ?? 0) + 1, info.firstSequence)
            guard from <= info.lastSequence else { continue }
            var events: [InputEvent] = []
            events.reserveCapacity(min(page, Int(info.lastSequence - from + 1)))
            // Up to its last event in `inputs`, not what was committed since: the inputs are
            // one cut of the log, so no input's page holds an event of a later commit while
            // another's lacks one that commit made before it.
            try store.forEachEvent(in: info.name, from: from, through: info.lastSequence, limit: page) { sequence, time, payload, trace, _, key in
                events.append(
                    InputEvent(
                        stream: info.name, sequence: sequence, millis: CommitTime.millis(time), payload: Data(payload),
                        traceParent: trace.flatMap(TraceParent.init(bytes:)), key: key.flatMap(EventKey.init(bytes:))))
            }
            // A page may have more behind it: it is full, or it ended at a hole (`EventHole`).
            if let last = events.last { pages.append((order, events, events.count == page || last.sequence < info.lastSequence)) }
        }
        guard pages.count > 1 else { return pages.first?.events ?? [] }
        // The merge's horizon: the earliest last event of a page that may have more.
        let horizon = pages.filter(\.full).map { (millis: $0.events.last!.millis, order: $0.order) }.min { Self.precedes($0, $1) }
        var merged: [(millis: Int64, order: Int, event: InputEvent)] = []
        for page in pages {
            for event in page.events {
                if let horizon, Self.precedes(horizon, (event.millis, page.order)) { break }
                merged.append((event.millis, page.order, event))
            }
        }
        merged.sort { ($0.millis, $0.order, $0.event.sequence) < ($1.millis, $1.order, $1.event.sequence) }
        return merged.map(\.event)
    }

    private static func precedes(_ a: (millis: Int64, order: Int), _ b: (millis: Int64, order: Int)) -> Bool {
        (a.millis, a.order) < (b.millis, b.order)
    }
}

/// The commit time of a stored event's text (`2026-11-28T15:49:48.123Z`) in ms. Written by
/// hand: it runs once per input event, and a date formatter took longer than most
/// programs do.
enum CommitTime {
    static func millis(_ text: UnsafeRawBufferPointer) -> Int64 {
        guard text.count >= 24 else { return 0 }
        func number(_ from: Int, _ count: Int) -> Int64 {
            var value: Int64 = 0
            for index in from..<(from + count) { value = value * 10 + Int64(text[index] &- 48) }
            return value
        }
        let (year, month, day) = (number(0, 4), number(5, 2), number(8, 2))
        // Days from 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        let seconds = days * 86_400 + number(11, 2) * 3600 + number(14, 2) * 60 + number(17, 2)
        return seconds * 1000 + number(20, 3)
    }
}
