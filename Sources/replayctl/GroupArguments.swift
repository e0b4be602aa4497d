import ArgumentParser
import ReplayModel
import ReplayProtocol

/// A consumer group's options, as `subscribe --group` and `work` take them: the words of
/// `SUB … group=`, checked before connecting.
struct GroupArguments: ParsableArguments {
    @Option(help: ArgumentHelp("Read as a member of this consumer group (created on first use).", valueName: "name"))
    var group: String?
    @Option(help: ArgumentHelp("The member's id (default: one of its own per run).", valueName: "id"))
    var member: String?
    @Option(help: ArgumentHelp("Seconds a member holds an event before another gets it (the group's setting).", valueName: "seconds"))
    var ackWait: Double?
    @Option(help: ArgumentHelp("Deliveries before an event goes to --dead-letter (the group's setting).", valueName: "n"))
    var maxDeliver: Int?
    @Option(help: ArgumentHelp("Where events go after --max-deliver deliveries (the group's setting).", valueName: "stream"))
    var deadLetter: String?

    func validate() throws {
        if group == nil, member != nil || ackWait != nil || maxDeliver != nil || deadLetter != nil {
            throw ValidationError("--member, --ack-wait, --max-deliver and --dead-letter go with --group")
        }
        if let ackWait, !(ackWait > 0 && ackWait <= 86_400) { throw ValidationError("--ack-wait is a number of seconds, more than 0") }
        if let maxDeliver, maxDeliver < 1 { throw ValidationError("--max-deliver is at least 1") }
        if maxDeliver != nil, deadLetter == nil { throw ValidationError("--max-deliver needs --dead-letter: an event given up on must go somewhere") }
        if let deadLetter, let problem = StreamName.problem(with: deadLetter) {
            throw ValidationError("--dead-letter '\(deadLetter)' is not a valid stream name (\(problem))")
        }
    }

    /// SUB's group words, with the member's limit.
    func options(maxPending: Int? = nil) -> GroupOptions? {
        group.map {
            GroupOptions(group: $0, member: member, ackWait: ackWait, maxDeliver: maxDeliver, deadLetter: deadLetter, maxPending: maxPending)
        }
    }
}
