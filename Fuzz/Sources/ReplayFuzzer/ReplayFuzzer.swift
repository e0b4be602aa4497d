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
func fuzzOne(_ input: UnsafeRawBufferPointer) {
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

#if FUZZING
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    fuzzOne(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

/// libFuzzer's entry point for programs that have their own `main`.
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

/// SwiftPM links an executable's `main` to `<module>_main`: hand over to libFuzzer.
@_cdecl("ReplayFuzzer_main")
public func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var argc = argc
    var argv = argv
    return runFuzzerDriver(&argc, &argv) { data, size in fuzzerTestOneInput(data, size) }
}
#else
/// Without libFuzzer: replays every file given (or found in the given folders).
@main
enum CorpusReplayer {
    static func main() throws {
        var files: [String] = []
        for path in CommandLine.arguments.dropFirst() {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { continue }
            if isDirectory.boolValue {
                files += try FileManager.default.contentsOfDirectory(atPath: path).sorted().map { path + "/" + $0 }
            } else {
                files.append(path)
            }
        }
        for file in files {
            let data = try Data(contentsOf: URL(fileURLWithPath: file))
            data.withUnsafeBytes { fuzzOne($0) }
        }
        print("replayed \(files.count) inputs")
    }
}
#endif
