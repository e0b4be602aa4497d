import Foundation

/// What a derived stream computes, from which inputs, and when: one `Codable` type from
/// `replayctl derive`'s flags, the socket's `DERIVE` payload and `--config` declarations to
/// the `derivations` row that `sqlite3` reads (the same keys everywhere). A bad value is an
/// error wherever it is met (`validate`), never a silent default.
///
/// The operators are ReactiveCocoa's, and the articles':
/// - map / filter / flattenMap: `program` alone, run once per input event; its 0, 1 or
///   many outputs are the derived stream's events (`select(.amount > 100)`, `.items[]`).
/// - scan: `scan` holds the initial state (JSON text); `program` sees
///   `{state, event, stream, seq}` and returns the new state, or `{state, emit}` where
///   `emit` is an array of outputs; a plain state is emitted itself.
/// - combineLatest: with several inputs, `program` sees `{latest: {input: event}, stream,
///   seq}` once every input has an event.
/// - take / skip / takeUntil, distinctUntilChanged, tumbling windows: options on the above.
public struct DerivationSpec: Codable, Equatable, Sendable {
    /// When the derivation computes, as the articles' connections.
    public enum Connect: String, Codable, Sendable, CaseIterable {
        /// `replay()`: from creation, and again at every daemon start.
        case eager
        /// `replayLazily()`: from its first subscriber on, then it keeps going.
        case lazy
        /// `autoconnect()`: while anyone subscribes; it catches up from its durable
        /// position when someone subscribes again.
        case refcount
    }

    /// Where a new derivation starts reading its inputs.
    public enum Start: String, Codable, Sendable, CaseIterable {
        /// The inputs' retained beginning.
        case beginning
        /// Only what the inputs get after the derivation is created.
        case now
    }

    /// What a runtime error on one input event does (a program error, a non-JSON event, a
    /// budget exceeded): `skip` counts it, `stop` stops the derivation with its reason,
    /// `deadLetter` stores the event and the error in that stream and goes on.
    public enum OnError: Equatable, Sendable, Codable, CustomStringConvertible {
        case skip
        case stop
        case deadLetter(String)

        public init?(_ text: String) {
            switch text {
            case "skip": self = .skip
            case "stop": self = .stop
            default:
                guard text.hasPrefix("dead-letter="), case let stream = String(text.dropFirst(12)), StreamName.isValid(stream) else { return nil }
                self = .deadLetter(stream)
            }
        }

        public var description: String {
            switch self {
            case .skip: "skip"
            case .stop: "stop"
            case .deadLetter(let stream): "dead-letter=\(stream)"
            }
        }

        public init(from decoder: any Decoder) throws {
            let text = try decoder.singleValueContainer().decode(String.self)
            guard let policy = OnError(text) else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: Self.rule))
            }
            self = policy
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(description)
        }

        public static let rule = "on_error is skip, stop or dead-letter=<stream>"
    }

    /// Stream names or patterns (`orders/*`: the matching streams, those created later too).
    public var inputs: [String]
    /// The jq program.
    public var program: String
    /// scan's initial state, as JSON text; `nil`: not a scan.
    public var scan: String?
    /// A keyed scan: a jq program giving each event's key (a string or a number); each key
    /// has its own state, from `scan`, and the program sees `{state, key, event, stream,
    /// seq}`. A running sum per customer then touches one customer's state per event, where
    /// one object of every customer would be copied by jq at each event.
    public var scanKey: String?
    /// Emit the latest event of each input, keyed by input, once every input has one.
    public var combineLatest: Bool
    /// Tumbling windows of this many seconds of commit time: the scan's state starts again
    /// from `scan` in each window, and is emitted when the window closes.
    public var window: Double?
    /// Complete the derived stream after this many outputs.
    public var take: UInt64?
    /// Drop the first outputs.
    public var skip: UInt64?
    /// Complete the derived stream when this stream gets an event.
    public var takeUntil: String?
    /// Drop an output equal to the one before it.
    public var distinct: Bool
    public var connect: Connect
    public var start: Start
    public var onError: OnError

    enum CodingKeys: String, CodingKey {
        case inputs, program, scan, window, take, skip, distinct, connect, start
        case combineLatest = "combine_latest"
        case scanKey = "scan_key"
        case takeUntil = "take_until"
        case onError = "on_error"
    }

    public init(
        inputs: [String], program: String, scan: String? = nil, scanKey: String? = nil, combineLatest: Bool = false, window: Double? = nil,
        take: UInt64? = nil, skip: UInt64? = nil, takeUntil: String? = nil, distinct: Bool = false,
        connect: Connect = .eager, start: Start = .beginning, onError: OnError = .stop
    ) {
        self.inputs = inputs
        self.program = program
        self.scan = scan
        self.scanKey = scanKey
        self.combineLatest = combineLatest
        self.window = window
        self.take = take
        self.skip = skip
        self.takeUntil = takeUntil
        self.distinct = distinct
        self.connect = connect
        self.start = start
        self.onError = onError
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        inputs = try c.decode([String].self, forKey: .inputs)
        program = try c.decode(String.self, forKey: .program)
        scan = try c.decodeIfPresent(String.self, forKey: .scan)
        scanKey = try c.decodeIfPresent(String.self, forKey: .scanKey)
        combineLatest = try c.decodeIfPresent(Bool.self, forKey: .combineLatest) ?? false
        window = try c.decodeIfPresent(Double.self, forKey: .window)
        take = try c.decodeIfPresent(UInt64.self, forKey: .take)
        skip = try c.decodeIfPresent(UInt64.self, forKey: .skip)
        takeUntil = try c.decodeIfPresent(String.self, forKey: .takeUntil)
        distinct = try c.decodeIfPresent(Bool.self, forKey: .distinct) ?? false
        connect = try c.decodeIfPresent(Connect.self, forKey: .connect) ?? .eager
        start = try c.decodeIfPresent(Start.self, forKey: .start) ?? .beginning
        onError = try c.decodeIfPresent(OnError.self, forKey: .onError) ?? .stop
    }

    /// Why a definition was refused, in words for the person who wrote it.
    public struct Invalid: Error, Equatable, Sendable, CustomStringConvertible {
        public let message: String
        public var description: String { message }
        public init(_ message: String) { self.message = message }
    }

    /// The checks that need no interpreter: names, patterns, the options' combinations.
    /// `output` is the derived stream's name. The program is checked where it is compiled.
    public func validate(output: String) throws(Invalid) {
        if let problem = StreamName.problem(with: output) { throw Invalid("'\(output)' is not a valid stream name: \(problem)") }
        guard !inputs.isEmpty else { throw Invalid("a derivation reads at least one input (--from)") }
        guard inputs.count <= 16 else { throw Invalid("a derivation reads at most 16 inputs") }
        for input in inputs {
            if StreamPattern.isPattern(input) {
                guard case .success(let pattern) = StreamPattern.parse(input) else { throw Invalid("'\(input)' is not a valid pattern") }
                if pattern.matches(output) { throw Invalid("input pattern '\(input)' matches the derived stream '\(output)' itself") }
            } else {
                if let problem = StreamName.problem(with: input) { throw Invalid("input '\(input)' is not a valid stream name: \(problem)") }
                if input == output { throw Invalid("a derived stream cannot read itself") }
            }
        }
        guard !program.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else { throw Invalid("the jq program is empty") }
        if let scan, (try? JSONSerialization.jsonObject(with: Data(scan.utf8), options: .fragmentsAllowed)) == nil {
            throw Invalid("--scan takes the initial state as JSON, got '\(scan.prefix(64))'")
        }
        if combineLatest {
            guard inputs.count >= 2, !inputs.contains(where: StreamPattern.isPattern) else {
                throw Invalid("combine-latest takes two or more inputs by name")
            }
            if scan != nil || window != nil { throw Invalid("combine-latest does not combine with --scan or --window") }
        }
        if scanKey != nil {
            guard scan != nil else { throw Invalid("--scan-key keys a fold: give the state each key starts from with --scan INIT") }
            guard window == nil, !combineLatest else { throw Invalid("--scan-key does not combine with --window or --combine-latest") }
        }
        if let window {
            guard window >= 0.001, window <= 86_400 * 366 else { throw Invalid("--window is from 1ms to a year") }
            guard scan != nil else { throw Invalid("--window folds with --scan INIT: give the state each window starts from") }
        }
        if let takeUntil, let problem = StreamName.problem(with: takeUntil) {
            throw Invalid("--take-until '\(takeUntil)' is not a valid stream name: \(problem)")
        }
        if case .deadLetter(let stream) = onError, stream == output || inputs.contains(stream) {
            throw Invalid("the dead-letter stream must be neither an input nor the derived stream")
        }
    }

    /// The definition as JSON text: the socket's payload and the store's column.
    public var json: String {
        JSONText.of(self)
    }

    public init(json: some StringProtocol) throws(Invalid) {
        do {
            self = try JSONDecoder().decode(DerivationSpec.self, from: Data(json.utf8))
        } catch let DecodingError.dataCorrupted(context) {
            throw Invalid("bad derivation: \(context.debugDescription)")
        } catch let DecodingError.keyNotFound(key, _) {
            throw Invalid("bad derivation: '\(key.stringValue)' is missing")
        } catch let DecodingError.typeMismatch(_, context) {
            throw Invalid("bad derivation: '\(context.codingPath.map(\.stringValue).joined(separator: "."))' has the wrong type")
        } catch {
            throw Invalid("bad derivation: not a JSON object")
        }
    }
}
