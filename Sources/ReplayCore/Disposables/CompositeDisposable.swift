import ReplaySync

/// Disposes a set of disposables together. Anything added after disposal is disposed at once.
///
/// ```swift
/// let all = CompositeDisposable()
/// all.add(Disposables.action { print("a") })
/// all.add(Disposables.action { print("b") })
/// all.dispose()   // prints "a", "b"
/// ```
public final class CompositeDisposable: Disposable {
    /// Removes one member from its composite without disposing it.
    public struct Token: Sendable, Hashable {
        fileprivate let id: UInt64
    }

    private struct State {
        var members: [UInt64: any Disposable] = [:]
        var nextID: UInt64 = 0
        var disposed = false
    }

    private let state = Locked(State())

    public init(_ disposables: [any Disposable] = []) {
        for disposable in disposables { add(disposable) }
    }

    public var isDisposed: Bool { state.withLock { $0.disposed } }

    /// Adds a member; returns a token to remove it again, or `nil` if this was disposed
    /// already (then the member has been disposed).
    @discardableResult
    public func add(_ disposable: any Disposable) -> Token? {
        let token: Token? = state.withLock { state in
            guard !state.disposed else { return nil }
            let id = state.nextID
            state.nextID += 1
            state.members[id] = disposable
            return Token(id: id)
        }
        if token == nil { disposable.dispose() }
        return token
    }

    /// Adds an action to run on disposal.
    @discardableResult
    public func add(_ action: @escaping @Sendable () -> Void) -> Token? {
        add(ActionDisposable(action))
    }

    /// Forgets a member without disposing it (it finished on its own).
    public func remove(_ token: Token) {
        _ = state.withLock { $0.members.removeValue(forKey: token.id) }
    }

    public func dispose() {
        let members = state.withLock { state -> [any Disposable] in
            guard !state.disposed else { return [] }
            state.disposed = true
            defer { state.members = [:] }
            return state.members.sorted { $0.key < $1.key }.map(\.value)
        }
        for member in members { member.dispose() }
    }
}
