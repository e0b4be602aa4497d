import Foundation

/// Group members waiting for work (`WaitingMembers`): a hand-out with a ticket that would
/// give nothing waits, and the end of every batch serves the waiters of the streams it
/// touched, so that work reaches a member in the commit that made it (new events, or room
/// an ACK freed). Decisions are made on the batch's working copies like any other
/// request's; who waits is told to `WaitingMembers` once the batch committed.
extension WriterRules {
    /// A hand-out that answers at once if it gives something, else waits.
    mutating func handOutOrWait(_ waiter: WaitingMembers.Waiter) throws {
        // Its member stopped waiting before the writer saw it: nothing is handed out.
        guard !waiting.takeCancelled(waiter.ask.ticket) else { return completions.append { waiter.ask.done(.success(.nothing)) } }
        let result = try handOut(
            waiter.ask.group, of: waiter.ask.stream, to: waiter.ask.member, limit: waiter.ask.limit, deadLetterConfig: waiter.ask.deadLetterConfig,
            reader: waiter.ask.reader)
        guard case .success(let handout) = result, !handout.answersWaiter else { return completions.append { waiter.ask.done(result) } }
        var waiter = waiter
        waiter.due = handout.nextDue
        newWaiters.append(waiter)
    }

    /// The member is gone: answered with nothing, if it still waits (else it was answered
    /// already, or its hand-out has not reached the writer yet, which then answers it so).
    mutating func stopWaiting(_ ticket: WaitTicket) {
        if let index = newWaiters.firstIndex(where: { $0.ask.ticket == ticket }) {
            let waiter = newWaiters.remove(at: index)
            return completions.append { waiter.ask.done(.success(.nothing)) }
        }
        guard !answeredWaiters.contains(ticket) else { return }
        guard let waiter = waiting.waiter(ticket) else { return waiting.noteCancelled(ticket) }
        answer(waiter, .success(.nothing))
    }

    /// The end of the batch: every waiter of a stream it touched (and, when the alarm rang,
    /// of a stream whose group's time came) is tried again. A stream deleted fails its
    /// waiters; one another daemon changed (a shared database, not locked by this batch)
    /// answers them with nothing, and they ask again in a batch of their own, which locks it.
    mutating func serveWaiting() throws {
        guard !newWaiters.isEmpty || !waiting.isEmpty else { return }
        var names = Set(indexByName.keys)
        if servesDueWaiters { names.formUnion(waiting.streams(dueBy: millis)) }
        for name in names.sorted() {
            let standing = waiting.waiters(of: name).filter { !answeredWaiters.contains($0.ask.ticket) }
            let fresh = newWaiters.filter { $0.ask.stream == name }
            guard !standing.isEmpty || !fresh.isEmpty else { continue }
            newWaiters.removeAll { $0.ask.stream == name }
            // Once a member with room got nothing, its group has nothing to give this batch.
            var exhausted = Set<String>()
            for var waiter in standing + fresh {
                let result: Result<GroupHandout, StoreError>
                if exhausted.contains(waiter.ask.group), let index = indexByName[name], let group = streams[index].record.groups[waiter.ask.group] {
                    result = .success(GroupHandout(given: [], held: 0, skipped: nil, nextDue: group.nextDue, finished: false))
                } else {
                    result = try handOut(
                        waiter.ask.group, of: name, to: waiter.ask.member, limit: waiter.ask.limit, deadLetterConfig: waiter.ask.deadLetterConfig,
                        reader: waiter.ask.reader)
                }
                if case .success(let handout) = result, !handout.answersWaiter {
                    if handout.held < waiter.ask.limit { exhausted.insert(waiter.ask.group) }
                    waiter.due = handout.nextDue
                    retriedWaiters.append(waiter)
                } else {
                    answer(waiter, result)
                }
            }
        }
        for name in deleted where indexByName[name] == nil {
            for waiter in waiting.waiters(of: name) + newWaiters.filter({ $0.ask.stream == name }) where !answeredWaiters.contains(waiter.ask.ticket) {
                answer(waiter, .failure(.unknownStream(name)))
            }
            newWaiters.removeAll { $0.ask.stream == name }
        }
        for (name, record) in refreshed where indexByName[name] == nil {
            // Only a change another daemon made to the stream's events or groups: a refresh
            // that found the stream as this daemon knows it (after a reconnect, every stream
            // is read again) changes nothing for its members.
            let known = catalog[name]
            guard record?.info != known?.info || record?.groups != known?.groups else { continue }
            for waiter in waiting.waiters(of: name) where !answeredWaiters.contains(waiter.ask.ticket) { answer(waiter, .success(.nothing)) }
        }
    }

    private mutating func answer(_ waiter: WaitingMembers.Waiter, _ result: Result<GroupHandout, StoreError>) {
        answeredWaiters.insert(waiter.ask.ticket)
        completions.append { waiter.ask.done(result) }
    }
}
