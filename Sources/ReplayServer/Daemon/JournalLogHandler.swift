import Foundation
import Logging

/// Log lines for journald, when stderr is connected to it: each line starts with its
/// syslog priority (`<3>` error … `<7>` debug, as `sd-daemon(3)` prefixes), which journald
/// reads as the entry's priority, so `journalctl -p warning` finds the daemon's warnings.
/// No timestamp: journald stamps each entry itself.
///
/// A handler of its own (swift-log's `StreamLogHandler` writes its own prefix, a time and
/// the level in words, with no way to put the priority first).
public struct JournalLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    private let label: String
    private let write: @Sendable (String) -> Void

    public init(label: String, write: @escaping @Sendable (String) -> Void = JournalLogHandler.standardError) {
        self.label = label
        self.write = write
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let extra = event.metadata { merged.merge(extra) { _, new in new } }
        let details = merged.isEmpty ? "" : " " + merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        // One entry per line: a message with newlines (a state dump's) keeps its priority on each.
        let lines = "\(event.message)\(details)".split(separator: "\n", omittingEmptySubsequences: false)
        write(lines.map { "<\(Self.priority(event.level))>\(label): \($0)\n" }.joined())
    }

    /// The syslog priority of a level.
    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    /// Whether stderr is journald's stream: `JOURNAL_STREAM` names its device and inode
    /// (`systemd.exec(5)`), and a stderr redirected elsewhere no longer matches them.
    public static func stderrIsJournal(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        guard let stream = environment["JOURNAL_STREAM"] else { return false }
        let parts = stream.split(separator: ":")
        var status = stat()
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]), fstat(STDERR_FILENO, &status) == 0 else {
            return false
        }
        return UInt64(status.st_dev) == device && UInt64(status.st_ino) == inode
    }

    public static let standardError: @Sendable (String) -> Void = { text in
        FileHandle.standardError.write(Data(text.utf8))
    }
}
