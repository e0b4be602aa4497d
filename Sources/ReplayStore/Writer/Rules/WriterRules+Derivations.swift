import Foundation
import ReplayModel

/// Derived streams: a derivation is a durable consumer whose acknowledgement carries its
/// outputs. Its step (outputs, state, input positions) is one request, decided against
/// the positions it read from (a compare-and-set, so a runner that lost its claim or was
/// redefined under it changes nothing) and written in the batch's transaction: a crash
/// before the commit loses only work that is redone from the old positions; after it,
/// nothing is left to redo. So every output exists exactly once.
extension WriterRules {
    /// The derivation of the stream at `index` as this transaction leaves it so far.
    mutating func derivation(at index: Int) throws -> Derivation? {
        let record = streams[index].record
        if let working = derivationChanges[record.id] { return working }
        return try db.derivation(stream: record.id, name: record.info.name)
    }

    /// A derivation created (its stream too, if new), confirmed (the same definition
    /// again: `--config` declares it at every start), or rebuilt.
    mutating func define(_ definition: DerivationDefinition) throws -> Result<Derivation, StoreError> {
        let name = definition.stream
        let index: Int
        if let existing = try touch(name) {
            guard let current = try derivation(at: existing) else {
                return .failure(.streamExists(name))
            }
            // The same definition again is a no-op (a `--config` declaration at every
            // start), rebuilt only if it had stopped.
            if current.spec == definition.spec, !definition.rebuild || current.status == .running { return .success(current) }
            guard definition.rebuild else {
                return .failure(.derivationConflict(stream: name, reason: "it is defined otherwise; redefine it with --rebuild to recompute it"))
            }
            // The old outputs are deleted, and numbering goes on: a reader that resumes
            // from a sequence number never mistakes a new output for an old one.
            try db.deleteEvents(of: streams[existing].record.id)
            streams[existing].record.info.firstSequence = streams[existing].record.info.lastSequence + 1
            streams[existing].record.chainBase = streams[existing].record.chainHead
            streams[existing].record.info.byteCount = 0
            streams[existing].record.info.removedEvents = 0
            streams[existing].record.info.terminal = nil
            streams[existing].record.info.terminalAt = nil
            index = existing
        } else {
            if try record(name) != nil { return .failure(.streamExists(name)) }
            // Its events are jq's outputs: JSON, as HTTP readers are told.
            var config = definition.config
            config.contentType = config.contentType ?? "application/json"
            do throws(StoreError) { try admitNewStream(name, config) } catch { return .failure(error) }
            index = try insertStream(name, config)
        }
        let created = try derivation(at: index)?.createdAt ?? millis
        let derivation = Derivation(
            stream: name, spec: definition.spec, positions: startingPositions(definition.spec), createdAt: created, updatedAt: millis)
        derivationChanges[streams[index].record.id] = derivation
        streams[index].record.derived = true
        return .success(derivation)
    }

    /// Why an append from anyone but its derivation is refused, if the stream is derived.
    func refusal(toAppendTo index: Int) -> StoreError? {
        guard streams[index].record.derived else { return nil }
        let name = streams[index].record.info.name
        return .derivationConflict(stream: name, reason: "it is derived: only its derivation appends to it")
    }

    /// Where a new derivation starts: nothing read (the inputs' retained beginning), or
    /// every input's last event as the catalog has it (`now`). A stream a pattern matches
    /// later starts at its beginning either way.
    private func startingPositions(_ spec: DerivationSpec) -> [String: UInt64] {
        guard spec.start == .now else { return [:] }
        var positions: [String: UInt64] = [:]
        let patterns = spec.inputs.compactMap { input -> StreamPattern? in
            guard StreamPattern.isPattern(input), case .success(let pattern) = StreamPattern.parse(input) else { return nil }
            return pattern
        }
        for record in catalog.all where !record.info.isSoftDeleted {
            let name = record.info.name
            if spec.inputs.contains(name) || spec.takeUntil == name || patterns.contains(where: { $0.matches(name) }) {
                positions[name] = record.info.lastSequence
            }
        }
        return positions
    }

    /// A derivation's step: refused unless it read from the stored positions; otherwise its
    /// outputs appended with their origins, its dead letters, its state, positions,
    /// counters and status, and the derived stream's end if it came.
    mutating func perform(_ step: DerivationStep) throws -> Result<Derivation, StoreError> {
        let name = step.stream
        guard let index = try touch(name), var derivation = try derivation(at: index) else {
            return .failure(.unknownStream(name))
        }
        guard derivation.positions == step.expected else {
            return .failure(.derivationConflict(stream: name, reason: "its positions moved since this step read them (another runner, or a redefinition)"))
        }
        guard derivation.status == .running else {
            return .failure(.derivationConflict(stream: name, reason: "it is stopped: \(derivation.error ?? "")"))
        }
        if let full = sequenceNumbersLeft(for: step.outputs.count, in: index) { return .failure(full) }
        // Dead letters first, and undone with the rest if one is refused (its stream ended).
        if let stream = step.deadLetterStream, !step.deadLetters.isEmpty {
            let before = self
            // A new dead-letter stream keeps what the derived stream keeps.
            let config = autoCreate ?? StreamConfig(capacity: streams[index].record.info.config.capacity)
            try db.savepoint()
            for letter in step.deadLetters {
                if case .failure(let error) = try appendResult(letter, to: stream, autoCreate: config, conditions: .none) {
                    try db.rollbackToSavepoint()
                    self = before
                    return .failure(error)
                }
            }
            try db.releaseSavepoint()
        }
        for output in step.outputs {
            // A derived stream that ended (take) keeps its terminal event: later outputs
            // of the same step are not stored.
            guard try append(output.payload, to: index, origin: output.origin, trace: output.traceParent, key: output.key) != nil else { break }
        }
        if let terminal = step.terminal, streams[index].record.info.terminal == nil {
            streams[index].record.info.terminal = terminal
            streams[index].record.info.terminalAt = time
        }
        derivation.positions = step.positions
        derivation.state = step.state
        derivation.processed += step.processed
        derivation.errors += step.errors
        if let error = step.error { derivation.error = error }
        if step.stop { derivation.status = .stopped }
        derivation.updatedAt = millis
        streams[index].record.lastWrite = millis
        derivationChanges[streams[index].record.id] = derivation
        return .success(derivation)
    }

    /// The derivations this batch changed, written with its other rows (a stream it
    /// deleted took its derivation with it).
    func writeDerivations() throws {
        for (id, derivation) in derivationChanges where !deletedIDs.contains(id) {
            try db.writeDerivation(stream: id, derivation)
        }
    }
}
