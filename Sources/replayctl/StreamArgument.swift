import ArgumentParser
import ReplayModel

/// The `<stream>` argument of every verb that names one, checked with the daemon's own
/// rule before connecting, so that a bad name is a usage error (exit 64) that says what is
/// wrong, not a protocol error about a control line the name broke.
struct StreamArgument: ParsableArguments {
    @Argument(help: "The stream.") var stream: String

    func validate() throws {
        if let problem = StreamName.problem(with: stream) {
            throw ValidationError("'\(stream)' is not a valid stream name (\(problem)): \(StreamName.rule)")
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
