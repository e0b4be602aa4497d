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
            guard let mode = StreamSource.ConnectMode(rawValue: connect ?? CreateOptions.defaultConnect) else {
                throw ReplayError(.invalidConfig, "connect is eager, lazy or refcount")
            }
            let options: SourceOptions
            do {
                options = try SourceOptions(words: sourceOptions)
            } catch {
                throw ReplayError(.invalidConfig, error.message)
            }
            streamSource = StreamSource(command: command, connect: mode, options: options)
        } else if !sourceOptions.isEmpty {
            throw ReplayError(.invalidConfig, "source options need a source")
        }
        return StreamConfig(capacity: capacity, maxBytes: maxBytes, maxAge: maxAge, source: streamSource, keepUnacked: keepUnacked)
    }
}
