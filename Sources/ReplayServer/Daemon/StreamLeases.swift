import ReplayCore

/// What a reader of a stream holds while it reads: the lease that connects the stream's
/// lazy source or derivation (`replayLazily`) and keeps a refcount one running
/// (`autoconnect`). One place for both doors, so that a socket subscriber, an SSE reader
/// and a long poll count alike.
struct StreamLeases: Sendable {
    let sources: SourceRegistry
    let derivations: DerivationRegistry

    /// A reader of `stream` arrived; disposing the result says it left.
    func lease(_ stream: String) -> any Disposable {
        let source = sources.lease(stream)
        guard let derivation = derivations.lease(stream) else { return source }
        return CompositeDisposable([source, ActionDisposable(derivation)])
    }
}
