import CJQ
import CJQMeter
import CJQPlainJSON
import Foundation

/// One compiled jq program and the interpreter state that runs it (`jq_state`).
///
/// jq is the JSON language users already know from the command line, and Debian's
/// libjq-dev is its C library (jq 1.6); no listed Swift package evaluates jq, and writing
/// an interpreter by hand would be a second dialect of it.
///
/// What jq 1.6 shares between threads, read in its sources: every `jq_state` is its own
/// (its compiled program, its stack, its error callback); values (`jv`) are reference
/// counted without atomics, so a value must never be reachable from two threads; the
/// out-of-memory handler and the number formatter's context are per thread (pthread
/// keys, `jv_alloc.c`, `jv_print.c`/`jv_parse.c` keep a dtoa context per call or per
/// parser); the builtins are compiled into each state by `jq_compile`. So: one
/// `JQProgram` per derivation or reader, used from one thread at a time, and no `jv`
/// crosses out of it (results leave as bytes). The type is not `Sendable` for that reason.
/// One thing jq does share: when `malloc` fails, it prints and calls `abort()`; a
/// program that grows without bound is therefore cut off by `Budget` before it gets there
/// (`JQWatchdog`).
public final class JQProgram {
    /// A compile error (with where, as jq words it) or a runtime error on one input.
    public struct Failure: Error, Equatable, Sendable, CustomStringConvertible {
        public let message: String
        public var description: String { message }
        public init(_ message: String) { self.message = message }
    }

    /// What one input may cost: outputs and their bytes, counted here; time and the heap's
    /// growth, watched by `JQWatchdog`. Past any of them the program is stopped and the input
    /// is a runtime error. 250 ms is KurrentDB's default for a projection's event.
    public struct Budget: Sendable {
        public var maxOutputs: Int
        public var maxOutputBytes: Int
        public var timeLimit: Duration
        public var memoryLimit: Int

        public init(maxOutputs: Int = 10_000, maxOutputBytes: Int = 16 << 20, timeLimit: Duration = .milliseconds(250), memoryLimit: Int = 256 << 20) {
            self.maxOutputs = maxOutputs
            self.maxOutputBytes = maxOutputBytes
            self.timeLimit = timeLimit
            self.memoryLimit = memoryLimit
        }
    }

    public let source: String
    public let budget: Budget
    private var state: OpaquePointer?
    /// Messages jq reported through its error callback while compiling.
    private let messages = Messages()
    /// Its place in the watchdog's watch (a program that compiled).
    private var slot: JQWatchdog.Slot?
    /// Its runs' memory and breach, shared with C (`JQWatchdog`).
    private let meter: UnsafeMutablePointer<replay_jq_meter>

    private final class Messages {
        var lines: [String] = []
    }

    /// Compiles `source`, after refusing builtins that read anything but the input
    /// (`ProgramVetting`).
    public init(_ source: String, budget: Budget = Budget()) throws(Failure) {
        if let refusal = ProgramVetting.refusal(of: source) { throw Failure(refusal) }
        guard JQWatchdog.metersMemory || budget.memoryLimit == .max else {
            throw Failure("jq's memory cannot be metered here (libjq is not a shared library), so a memory limit cannot be kept")
        }
        self.source = source
        meter = .allocate(capacity: 1)
        meter.initialize(to: replay_jq_meter())
        self.budget = budget
        guard let state = jq_init() else { throw Failure("jq could not start (out of memory)") }
        self.state = state
        let context = Unmanaged.passUnretained(messages).toOpaque()
        jq_set_error_cb(
            state,
            { context, message in
                let messages = Unmanaged<Messages>.fromOpaque(context!).takeUnretainedValue()
                messages.lines.append(JQProgram.text(of: message))
            }, context)
        let compiled = jq_compile(state, source)
        guard compiled != 0 else {
            let words = messages.lines.filter { !$0.hasSuffix("compile error") && !$0.contains("compile errors") }
            throw Failure(words.isEmpty ? "the jq program does not compile" : words.joined(separator: "; "))
        }
        slot = JQWatchdog.shared.adopt()
    }

    deinit {
        // Only a program that compiled was adopted.
        if let slot { JQWatchdog.shared.release(slot) }
        jq_teardown(&state)
        meter.deallocate()
    }

    /// Runs the program on one JSON document given as bytes; its outputs, each as compact
    /// JSON. A non-JSON input is a runtime error.
    public func run(json input: some ContiguousBytes) throws(Failure) -> [Data] {
        try run(taking: Self.parsed(input))
    }

    /// `run(json:)` with its failure as a value: what a stateless derivation keeps for each
    /// event it computes ahead of the engine (`DerivationEngine.compute`, `ComputeHelper`).
    public func result(json input: some ContiguousBytes) -> Result<[Data], Failure> {
        Result { () throws(Failure) in try run(json: input) }
    }

    /// Runs the program on a value built from parts (scan's `{state, event, stream, seq}`).
    func run(_ input: JQValue) throws(Failure) -> [Data] {
        try run(taking: input.take())
    }

    /// The outputs of a run on a value of its own, which the run takes.
    private func run(taking input: jv) throws(Failure) -> [Data] {
        var outputs: [Data] = []
        try forEachOutput(taking: input) { value throws(Failure) in outputs.append(Self.dump(value)) }
        return outputs
    }

    /// Runs a program that returns at most one value (scan's, a key's): that value, `nil`
    /// if none.
    func single(_ input: JQValue) throws(Failure) -> JQValue? {
        var first: jv?
        do {
            try forEachOutput(input) { value throws(Failure) in
                guard first == nil else { throw Failure("the program returns at most one value per event, and returned more") }
                first = jv_copy(value)
            }
        } catch {
            if let first { jv_free(first) }
            throw error
        }
        return first.map { JQValue($0) }
    }

    /// Runs the program, handing each output to `body` (borrowed: valid during the call),
    /// within the budget. A runtime error is thrown with jq's message; a breach of the
    /// time or memory limit, with which.
    func forEachOutput(_ input: JQValue, _ body: (jv) throws(Failure) -> Void) throws(Failure) {
        try forEachOutput(taking: input.take(), body)
    }

    /// `forEachOutput` on a value of its own, which the run takes: a parsed event needs no
    /// `JQValue` made for it.
    private func forEachOutput(taking input: jv, _ body: (jv) throws(Failure) -> Void) throws(Failure) {
        let slot = slot!
        JQWatchdog.shared.begin(slot, state: state!, meter: meter, input: input, budget: budget)
        var failure: Failure?
        do { try outputs(body) } catch { failure = error }
        switch JQWatchdog.shared.end(slot, budget: budget) {
        case .time(let limit)?:
            throw Failure("the program ran past its time limit of \(String(format: "%g", limit / .seconds(1))) s on one event")
        case .memory(let limit)?:
            throw Failure("the program grew past its memory limit of \(limit >> 20) MB on one event")
        case nil:
            if let failure { throw failure }
        }
    }

    /// The started program's outputs, until it ends or fails.
    private func outputs(_ body: (jv) throws(Failure) -> Void) throws(Failure) {
        var count = 0
        var bytes = 0
        while true {
            let result = jq_next(state)
            if jv_is_valid(result) != 0 {
                defer { jv_free(result) }
                count += 1
                // Strings and containers count by their size in memory, roughly: a
                // program that builds without end is cut off before malloc fails.
                bytes += Self.approximateSize(result)
                if count > budget.maxOutputs || bytes > budget.maxOutputBytes {
                    // Stops the program where it stands; the next `jq_start` resets it.
                    throw Failure("the program produced more than \(budget.maxOutputs) outputs or \(budget.maxOutputBytes) bytes for one event")
                }
                try body(result)
                continue
            }
            if jv_invalid_has_msg(jv_copy(result)) != 0 {
                throw Failure(Self.text(of: jv_invalid_get_msg(result)))
            }
            jv_free(result)
            return
        }
    }

    /// A value as compact JSON bytes (borrowed: `value` stays the caller's): a plain value's
    /// by `replay_plain_json_print`, every other one's by jq's own printer.
    static func dump(_ value: jv) -> Data {
        let printed = withUnsafeTemporaryAllocation(of: CChar.self, capacity: 1024) { buffer -> Data? in
            let length = replay_plain_json_print(value, buffer.baseAddress!, Int32(buffer.count))
            return length < 0 ? nil : Data(bytes: buffer.baseAddress!, count: Int(length))
        }
        if let printed { return printed }
        let dumped = jv_dump_string(jv_copy(value), 0)
        defer { jv_free(dumped) }
        return Data(bytes: jv_string_value(dumped), count: Int(jv_string_length_bytes(jv_copy(dumped))))
    }

    private static func approximateSize(_ value: jv) -> Int {
        switch jv_get_kind(value) {
        case JV_KIND_STRING: Int(jv_string_length_bytes(jv_copy(value)))
        case JV_KIND_ARRAY: 16 * Int(jv_array_length(jv_copy(value)))
        case JV_KIND_OBJECT: 32 * Int(jv_object_length(jv_copy(value)))
        default: 16
        }
    }

    /// A JSON document's value; a non-JSON one is a runtime error that says why.
    static func parse(_ bytes: some ContiguousBytes) throws(Failure) -> JQValue {
        JQValue(try parsed(bytes))
    }

    /// `parse`'s value, owned by the caller: a plain document's by `replay_plain_json_parse`,
    /// every other one's by jq's own parser (which also words the errors).
    private static func parsed(_ bytes: some ContiguousBytes) throws(Failure) -> jv {
        let value = bytes.withUnsafeBytes { raw -> jv in
            guard let base = raw.baseAddress, raw.count > 0 else { return jv_invalid_with_msg(jv_string("the event is empty, not JSON")) }
            let text = base.assumingMemoryBound(to: CChar.self)
            let length = Int32(clamping: raw.count)
            let plain = replay_plain_json_parse(text, length)
            return jv_is_valid(plain) != 0 ? plain : jv_parse_sized(text, length)
        }
        guard jv_is_valid(value) != 0 else {
            let message = jv_invalid_get_msg(value)
            throw Failure("the event is not JSON: " + text(of: message))
        }
        return value
    }

    /// A message value's text (taking it); a non-string is shown as JSON.
    static func text(of message: jv) -> String {
        if jv_get_kind(message) == JV_KIND_STRING {
            let text = String(cString: jv_string_value(message))
            jv_free(message)
            return text
        }
        let dumped = jv_dump_string(message, 0)
        let text = String(cString: jv_string_value(dumped))
        jv_free(dumped)
        return text
    }
}

/// A jq value owned by Swift until it is handed to the interpreter (`take`). Confined to
/// the thread of the `JQProgram` it is given to. A class rather than a non-copyable
/// struct: optionals and closures of non-copyable values are not yet usable in Swift 6.3
/// without ceremony at every use, and a derivation makes a handful per event.
final class JQValue {
    private var value: jv
    private var taken = false

    init(_ value: jv) { self.value = value }

    static func string(_ text: String) -> JQValue { JQValue(jv_string(text)) }
    static func number(_ number: Double) -> JQValue { JQValue(jv_number(number)) }
    static func object() -> JQValue { JQValue(jv_object()) }
    static func null() -> JQValue { JQValue(jv_null()) }

    /// Sets a field of an object value, taking `field`.
    func set(_ key: String, _ field: JQValue) {
        value = jv_object_set(value, jv_string(key), field.take())
    }

    /// Another reference to the same value (jq's values are immutable and counted).
    func copy() -> JQValue { JQValue(jv_copy(value)) }

    /// The value, borrowed for a call that does not take it.
    func withValue<R>(_ body: (jv) throws -> R) rethrows -> R { try body(value) }

    var json: Data { JQProgram.dump(value) }

    /// The value, for a call that consumes it; this object no longer owns it.
    func take() -> jv {
        precondition(!taken, "a jq value is handed to the interpreter once")
        taken = true
        return value
    }

    deinit { if !taken { jv_free(value) } }
}
