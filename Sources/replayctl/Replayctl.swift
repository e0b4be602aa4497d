import ArgumentParser
import ReplayProtocol

/// `replayctl`: publish to, subscribe to and administer the streams of a running replayd.
@main
struct Replayctl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replayctl",
        abstract: "Publish, subscribe and manage streams of a running replayd.",
        discussion: """
            The socket is --socket (before or after the subcommand), else $REPLAY_SOCKET, else \
            $XDG_RUNTIME_DIR/replayd.sock, else /tmp/replayd-$UID.sock.

            Data goes to standard output, messages to standard error. Exit status:
              0   success
              1   the daemon refused a request, or not every event was acknowledged
              2   the subscribed stream failed (its message is on standard error)
              3   replayd is not running on the socket
              4   verify found a broken hash chain
              64  bad arguments
            """,
        version: ReplayVersion.current,
        subcommands: [
            Send.self, Subscribe.self, Get.self, Scheduled.self, Unschedule.self, Create.self, Derive.self, Derivations.self, Info.self, List.self, Delete.self,
            Complete.self, Fail.self, Reset.self, Consumers.self, Groups.self, Pending.self, Subscriptions.self, Ack.self, Nack.self, Work.self,
            Ping.self, Token.self, Top.self, Backup.self, Verify.self,
        ])

    @OptionGroup var connection: ConnectionOptions
}
