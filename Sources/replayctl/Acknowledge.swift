import ArgumentParser
import ReplayClient
import ReplayProtocol

/// `replayctl ack` and `replayctl nack`: an operator's hand on a group's pending events, as
/// the member that holds them (PENDING shows who). The command joins the group as that
/// member with `max_pending=0`, so it is handed nothing and its leaving frees nothing.
struct GroupMemberArguments: ParsableArguments {
    @Option(help: ArgumentHelp("The consumer group.", valueName: "name")) var group: String
    @Option(help: ArgumentHelp("The member holding the events (replayctl pending shows it).", valueName: "id")) var member: String
    @Argument(help: "The events' sequence numbers.") var sequences: [UInt64]

    func validate() throws {
        guard !sequences.isEmpty else { throw ValidationError("give at least one sequence number") }
    }

    func join(_ stream: String, with client: ReplayClient) async throws -> GroupConsumer {
        try await client.join(stream, group: GroupOptions(group: group, member: member, maxPending: 0))
    }
}

struct Ack: DaemonCommand, StreamCommand {
    static let configuration = CommandConfiguration(
        abstract: "Acknowledge pending events of a consumer group, as the member holding them.",
        discussion: """
            For an operator: an event a stuck worker holds is acknowledged in its name, and \
            leaves the group's pending set. Each ACK is answered once stored; one that the \
            member does not hold is refused (exit 1), and nothing changes for it.
            """)

    @OptionGroup var connection: ConnectionOptions
    @ParentCommand var root: Replayctl
    @OptionGroup var target: StreamArgument
    @OptionGroup var member: GroupMemberArguments

    func run(with client: ReplayClient) async throws {
        let consumer = try await member.join(stream, with: client)
        for sequence in member.sequences { try await consumer.subscription.acknowledge(sequence) }
    }
}

struct Nack: DaemonCommand, StreamCommand {
    static let configuration = CommandConfiguration(
        abstract: "Give pending events of a consumer group back, as the member holding them.",
        discussion: """
            For an operator: events a stuck worker holds go back to the group at once (or after \
            --delay), to be handed to another member, or to the dead-letter stream after the \
            group's max_deliver.
            """)

    @OptionGroup var connection: ConnectionOptions
    @ParentCommand var root: Replayctl
    @OptionGroup var target: StreamArgument
    @OptionGroup var member: GroupMemberArguments
    @Option(help: ArgumentHelp("Seconds before they are handed out again.", valueName: "seconds")) var delay: Double?

    func run(with client: ReplayClient) async throws {
        let consumer = try await member.join(stream, with: client)
        for sequence in member.sequences { try await consumer.subscription.giveBack(sequence, delay: delay) }
    }
}
