/// A glob over stream names, with the Durable Streams rules: the name is split at `/`,
/// `*` matches exactly one segment and `**` matches zero or more. Every other segment
/// matches itself. One matcher for pattern subscriptions, consumer groups over patterns,
/// and (to come) Durable Streams subscriptions and token scopes, so that a pattern means
/// the same thing wherever it is written.
///
/// Stream names cannot contain `*` (`StreamName`), so a target holding one is a pattern
/// and never a name. A `*` inside a segment (`ord*`) is refused rather than matched
/// literally: it would match no stream, which is never what was meant.
public struct StreamPattern: Sendable, Hashable, CustomStringConvertible {
    enum Segment: Sendable, Hashable {
        case literal(Substring)
        /// `*`: one segment, whatever it is.
        case one
        /// `**`: zero or more segments.
        case any
    }

    public let description: String
    let segments: [Segment]

    /// Whether `target` (a SUB's first word, for example) is meant as a pattern.
    public static func isPattern(_ target: String) -> Bool {
        target.utf8.contains(UInt8(ascii: "*"))
    }

    /// The pattern, or what is wrong with it in a few words.
    public static func parse(_ text: String) -> Result<StreamPattern, PatternError> {
        guard !text.isEmpty, text.utf8.count <= StreamName.maxLength else {
            return .failure(PatternError("a pattern has 1 to \(StreamName.maxLength) bytes"))
        }
        var segments: [Segment] = []
        for part in text.split(separator: "/", omittingEmptySubsequences: false) {
            switch part {
            case "*": segments.append(.one)
            case "**": if segments.last != .any { segments.append(.any) }  // `**/**` is `**`
            default:
                if part.contains("*") {
                    return .failure(PatternError("'\(part.prefix(40))': '*' and '**' stand for whole segments between slashes"))
                }
                // Each literal segment follows the name rule, so `a//*` or `../*` are refused
                // in the same words a name would be.
                if let problem = StreamName.problem(with: String(part)) {
                    return .failure(PatternError("the segment '\(part.prefix(40))' is not part of any stream name: \(problem)"))
                }
                segments.append(.literal(part))
            }
        }
        return .success(StreamPattern(description: text, segments: segments))
    }

    /// Whether the stream `name` matches.
    public func matches(_ name: String) -> Bool {
        let parts = name.split(separator: "/", omittingEmptySubsequences: false)
        return Self.match(segments[...], parts[...])
    }

    /// Segment by segment; `**` tries each split of what is left. Patterns are short and
    /// rarely hold more than one `**`, so the backtracking stays small.
    private static func match(_ pattern: ArraySlice<Segment>, _ name: ArraySlice<Substring>) -> Bool {
        var pattern = pattern
        var name = name
        while let segment = pattern.first {
            switch segment {
            case .any:
                let rest = pattern.dropFirst()
                if rest.isEmpty { return true }
                var tail = name
                while true {
                    if match(rest, tail) { return true }
                    guard !tail.isEmpty else { return false }
                    tail = tail.dropFirst()
                }
            case .one:
                guard !name.isEmpty else { return false }
            case .literal(let literal):
                guard name.first == literal else { return false }
            }
            pattern = pattern.dropFirst()
            name = name.dropFirst()
        }
        return name.isEmpty
    }
}

/// Why a pattern was refused.
public struct PatternError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}
