import Foundation
import ReplayAuth
import ReplayModel
import ReplayProtocol

/// Who may do what over the socket (the `access` rules of `--config`): each rule gives a
/// uid or a gid operations on a stream pattern, with the operation names of the HTTP
/// door's tokens (docs/SECURITY.md). A connection's principal is every rule naming its
/// peer's uid or primary gid (`SO_PEERCRED`); with rules, a peer no rule names may do
/// nothing. Without rules, nothing changes: the socket file's permissions and
/// `--allow-uid`/`--allow-gid` decide who connects, and a connection may do everything.
struct SocketRules: Sendable {
    struct Rule: Sendable {
        let uid: UInt32?
        let gid: UInt32?
        let grant: Grant
    }

    let rules: [Rule]

    func principal(for peer: PeerCredentials) -> Principal {
        Principal(
            name: "uid \(peer.uid)",
            grants: rules.filter { $0.uid == peer.uid || $0.gid == peer.gid }.map(\.grant))
    }

    /// Why `principal` may not run `command`, in the words of `-ERR forbidden`; `nil`: it may.
    static func refusal(of command: ClientCommand, by principal: Principal) -> ReplayError? {
        guard principal.grants != nil else { return nil }
        let needed: [(StreamOperation, String)]
        switch command {
        case .windowed(let subscription, _), .filtered(let subscription, _), .hashed(let subscription):
            return refusal(of: subscription, by: principal)
        case .publish(let stream, _), .publishChecked(let stream, _, _), .schedule(let stream, _, _, _), .unschedule(let stream, _):
            needed = [(.write, stream)]
        case .atomic(let events):
            needed = events.map { (.write, $0.stream) }
        case .subscribe(let stream, _, _), .subscribeDurable(let stream, _, _, _), .subscribeGroup(let stream, _, _, _),
            .info(let stream), .latest(let stream, _), .consumers(let stream), .pending(let stream, _), .scheduled(let stream, _):
            needed = [(.read, stream)]
        case .groups(let target):
            if StreamPattern.isPattern(target), case .success(let pattern) = StreamPattern.parse(target) {
                return principal.may(.read, onEvery: pattern) ? nil : refused(.read, "every stream of '\(target)'", principal)
            }
            needed = [(.read, target)]
        case .subscribePattern(let pattern, _, _), .subscribePatternGroup(let pattern, _, _, _):
            return principal.may(.read, onEvery: pattern) ? nil : refused(.read, "every stream of '\(pattern)'", principal)
        case .create(let stream, _), .delete(let stream), .complete(let stream), .fail(let stream, _), .reset(let stream, _),
            .deleteConsumer(let stream, _), .deleteGroup(let stream, _):
            needed = [(.admin, stream)]
        case .subscriptions:
            return principal.mayEverywhere(.admin) ? nil : refused(.admin, "every stream", principal)
        case .verify(let targets, _):
            // Verifying reads the events: every stream it names, or every stream.
            guard !targets.isEmpty else { return principal.mayEverywhere(.read) ? nil : refused(.read, "every stream", principal) }
            for target in targets {
                if StreamPattern.isPattern(target), case .success(let pattern) = StreamPattern.parse(target) {
                    if !principal.may(.read, onEvery: pattern) { return refused(.read, "every stream of '\(target)'", principal) }
                } else if !principal.may(.read, on: target) {
                    return refused(.read, "stream '\(target)'", principal)
                }
            }
            return nil
        case .backup:
            // A copy holds every stream, and the daemon's signing key.
            return principal.mayEverywhere(.admin) ? nil : refused(.admin, "every stream (a backup copies them all)", principal)
        case .derive(let stream, let definition, _):
            // Defining a derived stream writes it, and reads its inputs for anyone who may
            // read it: both are checked.
            let inputs = (try? DerivationSpec(json: definition))?.inputs ?? []
            for input in inputs {
                if StreamPattern.isPattern(input), case .success(let pattern) = StreamPattern.parse(input) {
                    if !principal.may(.read, onEvery: pattern) { return refused(.read, "every stream of '\(input)'", principal) }
                } else if !principal.may(.read, on: input) {
                    return refused(.read, "'\(input)'", principal)
                }
            }
            needed = [(.admin, stream)]
        case .derivations:
            // DERIVATIONS shows only the derived streams it may read.
            needed = []
        case .list, .unsubscribe, .ack, .nack, .more, .ping:
            // LIST shows only the streams it may read; ACK, NACK and MORE act on what a SUB
            // was allowed to read.
            needed = []
        }
        for (operation, stream) in needed where !principal.may(operation, on: stream) {
            return refused(operation, "'\(stream)'", principal)
        }
        return nil
    }

    private static func refused(_ operation: StreamOperation, _ what: String, _ principal: Principal) -> ReplayError {
        DaemonMetrics.socketDenied.increment()
        return ReplayError(.forbidden, "\(principal.name) may not \(operation.rawValue) \(what) (the access rules of --config)")
    }
}
