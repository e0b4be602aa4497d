import Foundation
import NIOCore
import ReplayProtocol

@testable import ReplayServer

/// One fuzz input: the first byte chooses how the rest is split into reads; each read is
/// fed to a `CommandDecoder` with small limits, and every decoded command goes through a
/// `ConnectionState`. Invariants checked (a violation traps, which libFuzzer
/// reports as a crash):
/// - decoding never traps and ends in a command, a recoverable error, or a fatal error;
/// - a decoded command, encoded again, decodes to itself;
/// - the state machine's subscriptions never exceed its limit.
func fuzzCommands(_ input: UnsafeRawBufferPointer) {
    guard let first = input.first else { return }
    let body = UnsafeRawBufferPointer(rebasing: input.dropFirst())
    let chunk = Int(first % 16) + 1
    var decoder = CommandDecoder(maxLineLength: 256, maxPayload: 1024)
    var connection = ConnectionState(maxSubscriptions: 4)
    var buffer = ByteBuffer()
    var offset = 0
    while offset < body.count {
        let end = min(body.count, offset + chunk)
        buffer.writeBytes(UnsafeRawBufferPointer(rebasing: body[offset..<end]))
        offset = end
        do {
            while let inbound = try decoder.next(&buffer) {
                if case .command(let command) = inbound { checkRoundTrip(command) }
                _ = connection.receive(inbound)
                precondition(connection.subscriptions.count <= 4, "subscriptions beyond the limit")
            }
        } catch {
            precondition(error.isFatal, "a non-fatal error was thrown: \(error)")
            return  // the connection would be closed here
        }
    }
}

private func checkRoundTrip(_ command: ClientCommand) {
    var decoder = CommandDecoder(maxLineLength: 1 << 20, maxPayload: 1 << 20)
    var bytes = command.bytes
    guard let again = try? decoder.next(&bytes), again == .command(command) else {
        preconditionFailure("\(command) does not survive encode → decode")
    }
}
