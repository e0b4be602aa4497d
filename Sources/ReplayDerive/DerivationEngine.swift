import CJQ
import Foundation
import ReplayModel

/// One input event as a derivation reads it.
public struct InputEvent: Sendable {
    public let stream: String
    public let sequence: UInt64
    /// Commit time, ms since 1970: windows are cut by it.
    public let millis: Int64
    public let payload: Data
    /// Its publisher's trace context: the outputs it makes continue that trace.
    public let traceParent: TraceParent?
    /// Its key, if its publisher gave one.
    public let key: EventKey?

    public init(stream: String, sequence: UInt64, millis: Int64, payload: Data, traceParent: TraceParent? = nil, key: EventKey? = nil) {
        self.stream = stream
        self.sequence = sequence
        self.millis = millis
        self.payload = payload
        self.traceParent = traceParent
        self.key = key
    }
}

/// A derivation's operators over its events, one event at a time: the articles' map,
/// filter, flattenMap, scan, combineLatest, take, skip, takeUntil, distinctUntilChanged
/// and tumbling windows, evaluated by jq. Pure in its inputs: the same events from the
/// same state give the same outputs, which is what makes a redo after a crash, or a
/// rebuild, produce what the first run did.
///
/// Not `Sendable`: it holds jq's values and interpreter (`JQProgram`), confined to the
/// thread that runs the derivation. An event whose program fails leaves the state as it
/// was, so the error policy (skip, stop, dead-letter) decides with nothing half-applied.
public final class DerivationEngine {
    public let spec: DerivationSpec
    private let program: JQProgram
    /// The state as stored, but for the values kept live below.
    private var stored: DerivationState
    /// scan's accumulator and combineLatest's latest events, as jq values: parsed once, not
    /// per event (a running sum over 1,000 keys is a 20 KB object).
    private var accumulator: JQValue?
    private var latest: JQValue?
    private let initial: Data?
    /// A keyed scan's key program, and each key's state.
    private let keyProgram: JQProgram?
    private var keyed: [String: JQValue] = [:]

    /// Compiles the program and takes the stored state (`nil`: a new derivation).
    public init(_ spec: DerivationSpec, state: String? = nil, budget: JQProgram.Budget = .init()) throws(JQProgram.Failure) {
        self.spec = spec
        program = try JQProgram(spec.program, budget: budget)
        stored = try DerivationState(json: state)
        initial = spec.scan.map { Data($0.utf8) }
        if let scanKey = spec.scanKey { keyProgram = try JQProgram(scanKey, budget: budget) } else { keyProgram = nil }
        if keyProgram != nil {
            if let text = stored.accumulator { keyed = try Self.states(JQProgram.parse(Data(text.utf8))) }
        } else if let text = stored.accumulator ?? spec.scan {
            accumulator = try JQProgram.parse(Data(text.utf8))
        }
        if spec.combineLatest { latest = try JQProgram.parse(Data((stored.latest ?? "{}").utf8)) }
        if spec.take == 0 { stored.completed = true }
    }

    public var isCompleted: Bool { stored.completed }

    /// The state to store with the outputs so far.
    public var state: DerivationState {
        var state = stored
        state.accumulator = accumulator.map { String(decoding: $0.json, as: UTF8.self) }
        if keyProgram != nil {
            // Keys in order, so that the same states are the same text.
            let all = JQValue.object()
            for key in keyed.keys.sorted() { all.set(key, keyed[key]!.copy()) }
            state.accumulator = String(decoding: all.json, as: UTF8.self)
        }
        state.latest = latest.map { String(decoding: $0.json, as: UTF8.self) }
        return state
    }

    /// The outputs of one event, after skip, take and distinct. Throws a runtime error
    /// (the event is not JSON, the program failed or passed its budget) with the state
    /// unchanged.
    public func feed(_ event: InputEvent) throws(JQProgram.Failure) -> [DerivedOutput] {
        guard takes(event) else { return [] }
        let produced: [Data]
        // The outputs' key: the input's through a map or filter, the scan key's through a
        // keyed scan; a fold of many events (scan, window, combineLatest) is no one key's.
        var key: EventKey?
        if spec.combineLatest {
            produced = try combine(event)
        } else if keyProgram != nil {
            (produced, key) = try keyedScan(event)
        } else if spec.window != nil {
            produced = try windowed(event)
        } else if spec.scan != nil {
            produced = try scan(event)
        } else {
            produced = try program.run(json: event.payload)
            key = event.key
        }
        return limit(produced, origin: event, key: key)
    }

    /// Whether each event's outputs depend on that event alone (map, filter, flattenMap):
    /// then events may be computed apart (`compute`), on other threads with programs of
    /// their own, and handed to `feed(_:computed:)` in order.
    public var isStateless: Bool {
        !spec.combineLatest && spec.scanKey == nil && spec.window == nil && spec.scan == nil
    }

    /// A stateless program's outputs for one event, before skip, take and distinct.
    public func compute(_ event: InputEvent) -> Result<[Data], JQProgram.Failure> {
        program.result(json: event.payload)
    }

    /// `feed` for a stateless program, with the event's outputs already computed: skip,
    /// take, distinct and takeUntil apply here, in order, as `feed` applies them.
    public func feed(_ event: InputEvent, computed: Result<[Data], JQProgram.Failure>) throws(JQProgram.Failure) -> [DerivedOutput] {
        precondition(isStateless, "only a stateless program's events are computed apart")
        guard takes(event) else { return [] }
        return limit(try computed.get(), origin: event, key: event.key)
    }

    /// Whether `event` is computed at all: not once the stream completed, nor the
    /// takeUntil stream's events, which complete it.
    private func takes(_ event: InputEvent) -> Bool {
        guard !stored.completed else { return false }
        if let until = spec.takeUntil, event.stream == until, !spec.inputs.contains(until) {
            stored.completed = true
            return false
        }
        return true
    }

    /// The end of the inputs (an input completed or failed): a window still open is not
    /// emitted, since it never closed; the derived stream completes.
    public func complete() {
        stored.completed = true
    }

    // MARK: The operators

    /// `{state, event, stream, seq}` in; the new state out, or `{state, emit}`.
    private func scan(_ event: InputEvent) throws(JQProgram.Failure) -> [Data] {
        let folded = try fold(event, into: accumulator?.copy() ?? .null())
        guard let state = folded.state else { return [] }
        let emit = folded.emit ?? [state.json]
        accumulator = state
        return emit
    }

    /// `{state, key, event, stream, seq}` in, with the event's key's state; the key's new
    /// state out (emitted as `{key, state}`), or `{state, emit}`; and the key as the
    /// outputs' key, when it is one (`EventKey`'s rule).
    private func keyedScan(_ event: InputEvent) throws(JQProgram.Failure) -> ([Data], EventKey?) {
        let value = try JQProgram.parse(event.payload)
        guard let keyValue = try keyProgram!.single(value.copy()) else { throw JQProgram.Failure("the scan key's program gave no key") }
        guard let key = keyValue.withValue(Self.keyText) else {
            throw JQProgram.Failure("a scan key is a string or a number, not \(String(decoding: keyValue.json, as: UTF8.self).prefix(64))")
        }
        let input = JQValue.object()
        if let state = keyed[key] {
            input.set("state", state.copy())
        } else {
            input.set("state", try JQProgram.parse(initial ?? Data("null".utf8)))
        }
        input.set("key", keyValue.copy())
        input.set("event", value)
        input.set("stream", .string(event.stream))
        input.set("seq", .number(Double(event.sequence)))
        guard let output = try program.single(input) else { return ([], nil) }
        if let emit = output.withValue(Self.emitted) {
            keyed[key] = output.withValue { JQValue(jv_object_get(jv_copy($0), jv_string("state"))) }
            return (emit, EventKey(key))
        }
        keyed[key] = output
        let emitted = JQValue.object()
        emitted.set("key", keyValue)
        emitted.set("state", output.copy())
        return ([emitted.json], EventKey(key))
    }

    /// A key's text: a string's own, a number's JSON.
    private static func keyText(_ value: jv) -> String? {
        switch jv_get_kind(value) {
        case JV_KIND_STRING: String(cString: jv_string_value(value))
        case JV_KIND_NUMBER: String(decoding: JQProgram.dump(value), as: UTF8.self)
        default: nil
        }
    }

    /// A stored object of keys' states, as a dictionary.
    private static func states(_ object: JQValue) -> [String: JQValue] {
        object.withValue { value in
            guard jv_get_kind(value) == JV_KIND_OBJECT else { return [:] }
            var states: [String: JQValue] = [:]
            var index = jv_object_iter(value)
            while jv_object_iter_valid(value, index) != 0 {
                let key = jv_object_iter_key(value, index)
                states[String(cString: jv_string_value(key))] = JQValue(jv_object_iter_value(value, index))
                jv_free(key)
                index = jv_object_iter_next(value, index)
            }
            return states
        }
    }

    /// A fold per window of `window` seconds of commit time; a window's result, with its
    /// bounds, is emitted by the first event of a later window.
    private func windowed(_ event: InputEvent) throws(JQProgram.Failure) -> [Data] {
        let length = max(1, Int64((spec.window ?? 1) * 1000))
        let start = event.millis - ((event.millis % length) + length) % length
        var closed: [Data] = []
        var events = stored.windowEvents
        let current: JQValue
        if let open = stored.windowStart, open != start {
            if events > 0, let accumulator {
                let result = JQValue.object()
                result.set("start", .string(Timestamp.format(millis: open)))
                result.set("end", .string(Timestamp.format(millis: open + length)))
                result.set("events", .number(Double(events)))
                result.set("state", accumulator.copy())
                closed.append(result.json)
            }
            current = try JQProgram.parse(initial ?? Data("null".utf8))
            events = 0
        } else if let accumulator {
            current = accumulator.copy()
        } else {
            current = try JQProgram.parse(initial ?? Data("null".utf8))
        }
        let folded = try fold(event, into: current.copy())
        stored.windowStart = start
        if let state = folded.state {
            accumulator = state
            events += 1
        } else {
            accumulator = current
        }
        stored.windowEvents = events
        return closed
    }

    /// What scan's program made of one event: the new state (`nil`: it produced nothing,
    /// and the event is ignored), and what to emit if it said so (`{state, emit}`).
    private struct Folded {
        var state: JQValue?
        var emit: [Data]?
    }

    private func fold(_ event: InputEvent, into state: JQValue) throws(JQProgram.Failure) -> Folded {
        let input = JQValue.object()
        input.set("state", state)
        input.set("event", try JQProgram.parse(event.payload))
        input.set("stream", .string(event.stream))
        input.set("seq", .number(Double(event.sequence)))
        guard let output = try program.single(input) else { return Folded(state: nil, emit: nil) }
        let emit = output.withValue(Self.emitted)
        guard let emit else { return Folded(state: output, emit: nil) }
        return Folded(state: output.withValue { JQValue(jv_object_get(jv_copy($0), jv_string("state"))) }, emit: emit)
    }

    /// What `{state, emit}` (exactly those keys, `emit` an array or null) emits; `nil` if
    /// the value is a plain state.
    private static func emitted(_ value: jv) -> [Data]? {
        guard jv_get_kind(value) == JV_KIND_OBJECT, jv_object_length(jv_copy(value)) == 2,
            jv_object_has(jv_copy(value), jv_string("state")) != 0, jv_object_has(jv_copy(value), jv_string("emit")) != 0
        else { return nil }
        let emit = jv_object_get(jv_copy(value), jv_string("emit"))
        defer { jv_free(emit) }
        switch jv_get_kind(emit) {
        case JV_KIND_ARRAY:
            return (0..<jv_array_length(jv_copy(emit))).map { index in
                let element = jv_array_get(jv_copy(emit), index)
                defer { jv_free(element) }
                return JQProgram.dump(element)
            }
        case JV_KIND_NULL: return []
        default: return nil
        }
    }

    /// `{latest: {input: event}, stream, seq}`, once every input has an event.
    private func combine(_ event: InputEvent) throws(JQProgram.Failure) -> [Data] {
        let updated = latest?.copy() ?? .object()
        updated.set(event.stream, try JQProgram.parse(event.payload))
        let complete = updated.withValue { value in
            spec.inputs.allSatisfy { jv_object_has(jv_copy(value), jv_string($0)) != 0 }
        }
        guard complete else {
            latest = updated
            return []
        }
        let input = JQValue.object()
        input.set("latest", updated.copy())
        input.set("stream", .string(event.stream))
        input.set("seq", .number(Double(event.sequence)))
        let outputs = try program.run(input)
        latest = updated
        return outputs
    }

    /// skip, distinctUntilChanged and take, in that order, on the program's outputs.
    private func limit(_ produced: [Data], origin event: InputEvent, key: EventKey?) -> [DerivedOutput] {
        var outputs: [DerivedOutput] = []
        for payload in produced {
            guard !stored.completed else { break }
            if let skip = spec.skip, stored.skipped < skip {
                stored.skipped += 1
                continue
            }
            if spec.distinct {
                let text = String(decoding: payload, as: UTF8.self)
                if stored.last == text { continue }
                stored.last = text
            }
            outputs.append(
                DerivedOutput(
                    payload: payload, originStream: event.stream, originSequence: event.sequence, traceParent: event.traceParent, key: key))
            stored.emitted += 1
            if let take = spec.take, stored.emitted >= take { stored.completed = true }
        }
        return outputs
    }
}
