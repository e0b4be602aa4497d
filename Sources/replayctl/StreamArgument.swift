import ArgumentParser
import ReplayModel

/// The `<stream>` argument of every verb that names one, checked with the daemon's own
/// rule before connecting, so that a bad name is a usage error (exit 64) that says what is
/// wrong, not a protocol error about a control line the name broke.
struct StreamArgument: ParsableArguments {
    @Argument(help: "The stream.", completion: Self.names) var stream: String

    /// Completes a stream's name from the daemon's list (the daemon on `$REPLAY_SOCKET` or
    /// the default socket; none when it does not answer).
    static let names = CompletionKind.shellCommand("replayctl list --names 2>/dev/null")

    func validate() throws {
        try Self.check(stream)
    }

    /// A usage error that says what is wrong with `name`, if anything is.
    static func check(_ name: String) throws {
        if let problem = StreamName.problem(with: name) {
            throw ValidationError("'\(name)' is not a valid stream name (\(problem)): \(StreamName.rule)")
        }
    }
}

/// The `<stream>` argument of a verb that also takes a pattern over stream names, as the
/// protocol's SUB does (`orders/*`, `orders/**`): a name by the name rule, a pattern by the
/// pattern rule, each refused with its reason before connecting.
struct StreamOrPatternArgument: ParsableArguments {
    @Argument(
        help: "The stream, or a pattern over stream names ('orders/*': one segment; 'orders/**': any).", completion: StreamArgument.names)
    var stream: String

    /// The pattern, if the argument is one.
    var pattern: StreamPattern? {
        guard StreamPattern.isPattern(stream), case .success(let pattern) = StreamPattern.parse(stream) else { return nil }
        return pattern
    }

    func validate() throws {
        if StreamPattern.isPattern(stream) {
            if case .failure(let problem) = StreamPattern.parse(stream) { throw ValidationError("'\(stream)' is not a valid pattern: \(problem)") }
        } else {
            try StreamArgument.check(stream)
        }
    }
}

/// A verb that names a stream with `StreamArgument`.
protocol StreamCommand {
    var target: StreamArgument { get }
}

extension StreamCommand {
    var stream: String { target.stream }
}
