import Foundation
import NIOCore
import ReplayProtocol
import ReplayStore

/// CREATE, DELETE, INFO, LIST, COMPLETE, FAIL and RESET: each one store call and a reply.
struct StreamAdmin: Sendable {
    let store: EventStore
    let hub: Hub
    let defaultCapacity: Int?

    func perform(_ command: ClientCommand) async -> ServerFrame {
        do {
            return try await run(command)
        } catch let error as ReplayError {
            return .error(error)
        } catch let error as StoreError {
            return .error(ReplayError(error))
        } catch {
            return .error(ReplayError(.internal, "\(error)"))
        }
    }

    private func run(_ command: ClientCommand) async throws -> ServerFrame {
            switch command {
            case .create(let stream, let options):
                _ = try await store.create(stream, config: try config(options))
                return .ok
            case .delete(let stream):
                try await store.delete(stream)
                return .ok
            case .info(let stream):
                // This connection's earlier PUBs are committed before it looks.
                try await store.barrier()
                guard let info = store.info(stream) else { throw StoreError.unknownStream(stream) }
                return .info(json: try json(describe(info)))
            case .list:
                try await store.barrier()
                return .list(json: try json(store.streams.map(describe)))
            case .complete(let stream):
                try await store.terminate(stream, .completed)
                return .ok
            case .fail(let stream, let message):
                try await store.terminate(stream, .failed(message: message))
                return .ok
            case .reset(let stream, let keepHistory):
                try await store.reset(stream, keepHistory: keepHistory)
                return .ok
            case .publish, .subscribe, .unsubscribe, .ping:
                throw ReplayError(.internal, "\(command.verb) is not an administration command")
            }
    }

    private func config(_ options: CreateOptions) throws(ReplayError) -> StreamConfig {
        if options.source != nil {
            throw ReplayError(.invalidConfig, "stream sources are not supported by this version of replayd")
        }
        let capacity: Int? = switch options.capacity {
        case .count(let n): n
        case .unlimited: nil
        case nil: defaultCapacity
        }
        return StreamConfig(capacity: capacity, maxBytes: options.maxBytes, maxAge: options.maxAge)
    }

    func describe(_ info: StreamInfo) -> StreamDescription {
        let terminal: String?
        let message: String?
        switch info.terminal {
        case .completed: (terminal, message) = ("completed", nil)
        case .failed(let text): (terminal, message) = ("failed", text)
        case nil: (terminal, message) = (nil, nil)
        }
        return StreamDescription(
            name: info.name, capacity: info.config.capacity, maxBytes: info.config.maxBytes,
            maxAge: info.config.maxAge, createdAt: isoTime(info.createdAt),
            firstSeq: info.firstSequence, lastSeq: info.lastSequence, count: info.eventCount,
            bytes: info.byteCount, terminal: terminal, terminalMessage: message,
            subscribers: hub[info.name]?.subscriberCount ?? 0)
    }

    private func isoTime(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }

    private func json<T: Encodable>(_ value: T) throws(ReplayError) -> ByteBuffer {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        do {
            return ByteBuffer(bytes: try encoder.encode(value))
        } catch {
            throw ReplayError(.internal, "could not encode JSON: \(error)")
        }
    }
}
