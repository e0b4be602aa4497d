import ArgumentParser
import Foundation
import ReplayClient
import ReplayProtocol
import ReplaySync

struct Top: DaemonCommand {
    static let configuration = CommandConfiguration(
        abstract: "The daemon's streams live: rates, lag and sources, refreshing in place.",
        discussion: """
            Each stream's publish and delivery rates (events per second), events retained, \
            the largest lag among its durable consumers and groups, subscribers, its source and \
            state. Keys: s changes the order (rate, lag, name), q quits. Lags are read for the \
            first 200 streams in the order shown. When standard output is not a terminal \
            (or with --once), prints one snapshot after one interval and exits.
            """)

    @OptionGroup var connection: ConnectionOptions
    @ParentCommand var root: Replayctl

    @Option(help: ArgumentHelp("Seconds between refreshes.", valueName: "seconds")) var interval: Double = 1
    @Flag(help: "Print one snapshot (rates over one interval) and exit.") var once = false

    func validate() throws {
        guard interval >= 0.1, interval <= 3600 else { throw ValidationError("--interval takes seconds from 0.1 to 3600") }
    }

    func run(with client: ReplayClient) async throws {
        var board = TopBoard()
        guard !once, isatty(STDOUT_FILENO) == 1 else {
            try await sample(client, into: &board)
            try await Task.sleep(for: .seconds(interval))
            try await sample(client, into: &board)
            return printOut(Data((board.render(width: .max, height: .max, keys: false).joined(separator: "\n") + "\n").utf8))
        }
        let terminal = RawTerminal()
        terminal.startReadingKeys()
        defer { terminal.restore() }
        while true {
            try await sample(client, into: &board)
            let (rows, columns) = RawTerminal.size()
            terminal.draw(board.render(width: columns, height: rows))
            // Keys are looked at every 50 ms until the next refresh.
            let due = ContinuousClock.now + .seconds(interval)
            while ContinuousClock.now < due {
                for key in terminal.takeKeys() {
                    switch key {
                    case UInt8(ascii: "q"), UInt8(ascii: "Q"), 3, 4:  // q, Ctrl-C, Ctrl-D
                        return
                    case UInt8(ascii: "s"):
                        board.cycleOrder()
                        terminal.draw(board.render(width: columns, height: rows))
                    default: break
                    }
                }
                try await Task.sleep(for: .milliseconds(50))
            }
        }
    }

    private func sample(_ client: ReplayClient, into board: inout TopBoard) async throws {
        let streams = try await client.list()
        // Lag for the streams most likely shown: the first 200 in the board's order.
        let order = board.rows.map(\.name)
        let known = Set(order)
        let shown = (order + streams.map(\.name).filter { !known.contains($0) }).prefix(200)
        var lags: [String: UInt64] = [:]
        for name in shown where streams.contains(where: { $0.name == name }) {
            let consumers = (try? await client.consumers(name)) ?? []
            let groups = (try? await client.groups(name)) ?? []
            let largest = (consumers.map(\.lag) + groups.map(\.lag)).max()
            if let largest { lags[name] = largest }
        }
        board.update(streams, lags: lags, at: ContinuousClock.now.timeIntervalSinceStart)
    }
}

extension ContinuousClock.Instant {
    /// Seconds on a monotonic clock, for rates.
    var timeIntervalSinceStart: Double {
        let parts = (self - ContinuousClock.Instant.processStart).components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }

    static let processStart = ContinuousClock.now
}

/// The terminal in raw mode on the alternate screen for `top`: keys arrive one at a time
/// without echo (Ctrl-C among them, so the terminal is always restored), frames are drawn
/// in place, and `restore` puts everything back. Written by hand: no listed package does
/// terminal control, and this is termios and four escape sequences.
final class RawTerminal: Sendable {
    private let saved: termios?
    private let pending = Locked<[UInt8]>([])

    init() {
        var original = termios()
        if tcgetattr(STDIN_FILENO, &original) == 0 {
            saved = original
            var raw = original
            raw.c_lflag &= ~tcflag_t(ICANON | ECHO | ISIG)
            tcsetattr(STDIN_FILENO, TCSANOW, &raw)
        } else {
            saved = nil
        }
        FileHandle.standardOutput.write(Data("\u{1B}[?1049h\u{1B}[?25l".utf8))
    }

    /// Gathers keys as they are typed (read on a dispatch source, not a pool thread).
    func startReadingKeys() {
        let pending = self.pending
        FileHandle.standardInput.readabilityHandler = { handle in
            let data = handle.availableData
            if data.isEmpty {
                handle.readabilityHandler = nil
                pending.withLock { $0.append(4) }  // end of input: as Ctrl-D
            } else {
                pending.withLock { $0.append(contentsOf: data) }
            }
        }
    }

    /// The keys typed since the last call.
    func takeKeys() -> [UInt8] {
        pending.withLock { keys in
            defer { keys.removeAll() }
            return keys
        }
    }

    func draw(_ lines: [String]) {
        FileHandle.standardOutput.write(Data(("\u{1B}[H\u{1B}[2J" + lines.joined(separator: "\r\n")).utf8))
    }

    func restore() {
        FileHandle.standardInput.readabilityHandler = nil
        FileHandle.standardOutput.write(Data("\u{1B}[?25h\u{1B}[?1049l".utf8))
        if var saved { tcsetattr(STDIN_FILENO, TCSANOW, &saved) }
    }

    /// Rows and columns (24 by 80 when it cannot be asked).
    static func size() -> (rows: Int, columns: Int) {
        var size = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_row > 0, size.ws_col > 0 else { return (24, 80) }
        return (Int(size.ws_row), Int(size.ws_col))
    }
}
