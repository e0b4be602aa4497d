import ReplayModel
import ReplayProtocol
import ReplayStore

extension CreateOptions {
    /// The stored settings these options ask for. The one translation that CREATE over the
    /// socket and the `--config` declarations share.
    func streamConfig(defaultCapacity: Int?) throws(ReplayError) -> StreamConfig {
        let capacity: Int? =
            switch self.capacity {
            case .count(let n): n
            case .unlimited: nil
            case nil: defaultCapacity
            }
        var streamSource: StreamSource?
        if let command = source {
            let options: SourceOptions
            do {
                options = try SourceOptions(words: sourceOptions)
            } catch {
                throw ReplayError(.invalidConfig, error.message)
            }
            // A scheduled source runs at its ticks, whoever reads: eager unless told, and
            // nothing else.
            let given = connect ?? (options.schedule == nil ? CreateOptions.defaultConnect : "eager")
            guard let mode = StreamSource.ConnectMode(rawValue: given) else {
                throw ReplayError(.invalidConfig, "connect is eager, lazy or refcount")
            }
            if options.schedule != nil, mode != .eager {
                throw ReplayError(.invalidConfig, "a scheduled source runs at its ticks: its connect mode is eager, not \(mode.rawValue)")
            }
            streamSource = StreamSource(command: command, connect: mode, options: options)
        } else if !sourceOptions.isEmpty {
            throw ReplayError(.invalidConfig, "source options need a source")
        }
        if tombstoneRetention != nil, !compact {
            throw ReplayError(.invalidConfig, "a tombstone retention needs key compaction (compact)")
        }
        return StreamConfig(
            capacity: capacity, maxBytes: maxBytes, maxAge: maxAge, source: streamSource, keepUnacked: keepUnacked, eventTTL: eventTTL,
            compaction: compact ? KeyCompaction(tombstoneRetention: tombstoneRetention ?? KeyCompaction.defaultTombstoneRetention) : nil)
    }
}
