import Foundation

/// A durable consumer of a stream: a name whose acknowledged position the store keeps
/// with the durability of publishes. Acknowledgements are cumulative.
public struct ConsumerInfo: Sendable, Equatable {
    public let name: String
    /// Every event up to this sequence number is acknowledged; it resumes after it.
    public var ackedSequence: UInt64
    public let createdAt: Date
    public var updatedAt: Date

    public init(name: String, ackedSequence: UInt64, createdAt: Date, updatedAt: Date) {
        self.name = name
        self.ackedSequence = ackedSequence
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}
