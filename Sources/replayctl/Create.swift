import ArgumentParser
import ReplayClient

struct Create: ClientCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create a stream.",
        discussion: "Creating a stream that exists with the same settings succeeds and changes nothing.")

    @OptionGroup var connection: ConnectionOptions
    @ParentCommand var root: Replayctl

    @Argument(help: "The stream.") var stream: String
    @Option(help: ArgumentHelp("Events kept: a count, or 'unlimited' (default: the daemon's default).", valueName: "n|unlimited"))
    var capacity: String?
    @Option(name: .customLong("max-bytes"), help: "Payload bytes kept; the oldest go first.") var maxBytes: Int?
    @Option(name: .customLong("max-age"), help: ArgumentHelp("Events older than this are removed: 90s, 15m, 12h, 7d.", valueName: "duration"))
    var maxAge: String?

    func validate() throws {
        if let capacity, capacity.lowercased() != "unlimited", Int(capacity).map({ $0 >= 0 }) != true {
            throw ValidationError("--capacity takes a count (0 or more) or 'unlimited'")
        }
        if let maxAge, Duration.seconds(maxAge) == nil {
            throw ValidationError("--max-age takes a duration such as 90s, 15m, 12h or 7d")
        }
        if let maxBytes, maxBytes < 0 { throw ValidationError("--max-bytes must be 0 or more") }
    }

    func run(with client: ReplayClient) async throws {
        try await client.create(
            stream, capacity: capacity.flatMap { Int($0) }, unlimited: capacity?.lowercased() == "unlimited",
            maxBytes: maxBytes, maxAge: maxAge.flatMap(Duration.seconds))
    }
}

extension Duration {
    /// Parses `90`, `90s`, `15m`, `12h`, `7d` into seconds.
    static func seconds(_ text: String) -> Double? {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        if let unit = text.last, let scale = units[unit], let value = Double(text.dropLast()), value > 0 {
            return value * scale
        }
        if let value = Double(text), value > 0 { return value }
        return nil
    }
}
