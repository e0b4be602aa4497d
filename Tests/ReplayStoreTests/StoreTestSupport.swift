import Foundation
import ReplayCore
@testable import ReplayStore
import ReplayTesting

/// Opens a store on a real SQLite file in `directory`.
func openStore(
    _ directory: String, name: String = "replay.sqlite", durability: Durability = .full,
    autoCreate: StreamConfig? = nil, clock: @escaping @Sendable () -> Date = Date.init
) throws -> EventStore {
    try EventStore(
        path: directory + "/" + name, options: .init(durability: durability, autoCreate: autoCreate),
        clock: clock)
}

/// Runs a shell command; returns its standard output, throws on a non-zero exit.
@discardableResult
func shell(_ command: String) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/sh")
    process.arguments = ["-c", command]
    let output = Pipe()
    let errors = Pipe()
    process.standardOutput = output
    process.standardError = errors
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    let errorText = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw TestFailure("`\(command)` exited \(process.terminationStatus): \(errorText)")
    }
    return String(decoding: data, as: UTF8.self)
}

extension EventStore {
    /// Appends text payloads in order, waiting for each.
    func appendAll(_ payloads: [String], to stream: String) async throws -> [UInt64] {
        var sequences: [UInt64] = []
        for payload in payloads { sequences.append(try await append(Data(payload.utf8), to: stream).sequence) }
        return sequences
    }

    /// Every retained payload of a stream as text, read in small pages.
    func texts(_ stream: String) throws -> [String] {
        var result: [String] = []
        var from: UInt64 = 1
        while true {
            let page = try read(stream, from: from, limit: 3)
            result += page.map { String(decoding: $0.payload, as: UTF8.self) }
            guard let last = page.last else { return result }
            from = last.sequence + 1
        }
    }
}
