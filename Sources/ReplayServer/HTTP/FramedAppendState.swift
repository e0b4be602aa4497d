import HTTPTypes
import NIOCore
import ReplayStore

/// The decisions of `FramedAppendHandler`, without I/O: which bytes make a POST taken here,
/// when the connection is handed on to NIO's decoder and with what, and what waits while a
/// taken POST's write is at the store. Its events return what to do, as
/// `InlineAppendState`'s do; the handler does it, and tests drive it directly.
///
/// One POST at a time: while one is at the store, what arrives is kept (and reading stops
/// once anything is), and the end of the input and a quiesce wait for its answer. At the
/// first request not taken here, everything from that request's first byte is handed on,
/// with what was held, and the state is `left` for good.
struct FramedAppendState {
    /// A POST taken here.
    struct Taken {
        /// The request's fields (with no `HTTPRequest` around them: its pseudo-header
        /// fields were an allocation a POST).
        let fields: HTTPFields
        let stream: StreamRequest
        /// The body's length: what this connection's client was charged, where the door
        /// limits rates.
        let length: Int
        /// The head's length: where the body starts.
        let headLength: Int
        /// Active from its head, as the router's requests are.
        let started: RequestMetrics.Started?
    }

    enum Phase {
        /// Reading the next request's head.
        case reading
        /// A POST taken here, its body arriving.
        case collecting(Taken)
        /// Its write at the store (or its checks under way).
        case writing(Taken)
        /// The connection closes with the answer written: nothing more is read here.
        case closing
        /// Handed on to NIO's decoder, for good.
        case left
    }

    /// What to do with bytes read from the socket.
    enum Arrival {
        /// Kept: see what they complete (`next`).
        case kept
        /// Hand them on: the connection is NIO's decoder's.
        case forward
        /// Drop them: the connection is closing.
        case drop
    }

    /// What the bytes kept so far make.
    enum Next {
        /// Nothing yet: more must arrive, or the store must answer.
        case wait
        /// A POST's head, arrived whole: `took` it, or `leave`.
        case head(FramedRequestHead)
        /// A taken POST, arrived whole: `request` is its bytes, head and body. Check and
        /// write it, then `answered`, or `leave(returning:)` to hand it on.
        case write(Taken, request: ByteBuffer)
        /// A request not read here: `leave`.
        case leave
    }

    /// What the handler hands on when the connection leaves for NIO's decoder.
    struct Leaving {
        /// A POST taken and not answered here after all (cut short, or to a stream past its
        /// expiry): its charge and its activity are undone, and the router's will count it.
        let untaken: Taken?
        /// What arrived, from the first byte not answered here.
        let bytes: ByteBuffer?
        /// What was held, to pass on after the bytes.
        let held: HeldSignals
    }

    /// What to do once nothing is at the store.
    enum Release {
        /// Nothing.
        case none
        /// Pass on a held quiesce, and read if a read was held.
        case pass(quiesce: Bool, read: Bool)
        /// The input ended: `leave` (what is left of its requests is NIO's decoder's to end).
        case leave
    }

    /// The longest head read here; a longer one goes to NIO's decoder, with its own limits.
    let maxHeadLength: Int
    private(set) var phase = Phase.reading
    /// What has arrived and is not yet taken.
    private var received: ByteBuffer?
    /// How many of `received`'s bytes were searched for a head's end, and it was not there.
    private var searched = 0
    private var held = HeldSignals()

    init(maxHeadLength: Int) {
        self.maxHeadLength = maxHeadLength
    }

    // MARK: Inbound

    /// Bytes read from the socket.
    mutating func receive(_ bytes: ByteBuffer) -> Arrival {
        switch phase {
        case .left: return .forward
        case .closing: return .drop
        case .reading, .collecting, .writing: break
        }
        if received == nil {
            received = bytes
        } else {
            var bytes = bytes
            received!.writeBuffer(&bytes)
        }
        return .kept
    }

    /// The next step with what has arrived.
    mutating func next() -> Next {
        switch phase {
        case .writing, .closing, .left:
            return .wait
        case .reading:
            guard let buffer = received, buffer.readableBytes > 0 else {
                received = nil
                return .wait
            }
            let scan = buffer.withUnsafeReadableBytes {
                FramedRequestHead.scan($0, maxLength: maxHeadLength, searched: searched)
            }
            switch scan {
            case .incomplete:
                searched = buffer.readableBytes
                return .wait
            case .unsupported:
                return .leave
            case .head(let head):
                searched = 0
                return .head(head)
            }
        case .collecting(let taken):
            guard var buffer = received, buffer.readableBytes >= taken.headLength + taken.length else { return .wait }
            let request = buffer.readSlice(length: taken.headLength + taken.length)!
            received = buffer.readableBytes > 0 ? buffer : nil
            phase = .writing(taken)
            return .write(taken, request: request)
        }
    }

    /// The head `next` gave is taken: its body is collected.
    mutating func took(_ taken: Taken) {
        guard case .reading = phase else { return }
        phase = .collecting(taken)
    }

    /// The taken POST is answered; with `closing`, the connection closes with the answer.
    mutating func answered(closing: Bool) -> Taken? {
        guard case .writing(let taken) = phase else { return nil }
        if closing {
            phase = .closing
            received = nil
        } else {
            phase = .reading
        }
        return taken
    }

    /// The store answered after the connection closed: the POST is no longer active.
    mutating func dropped() -> Taken? {
        guard case .writing(let taken) = phase else { return nil }
        phase = .closing
        return taken
    }

    /// Hands the connection on to NIO's decoder; `request` is a taken POST's bytes that go
    /// on too (its stream expired, and only the router deletes it), before what came after.
    mutating func leave(returning request: ByteBuffer? = nil) -> Leaving {
        let untaken: Taken? =
            switch phase {
            case .collecting(let taken), .writing(let taken): taken
            case .reading, .closing, .left: nil
            }
        var bytes = request
        if var rest = received {
            if bytes == nil { bytes = rest } else { bytes!.writeBuffer(&rest) }
        }
        phase = .left
        received = nil
        return Leaving(untaken: untaken, bytes: bytes, held: held.release())
    }

    /// What was held, once nothing is at the store.
    mutating func releaseHeld() -> Release {
        switch phase {
        case .writing, .left:
            return .none
        case .closing:
            _ = held.release()
            return .none
        case .reading, .collecting:
            break
        }
        if held.inputClosed { return .leave }
        // A quiesce waits for a POST whose body is still arriving.
        let quiesce = held.quiesce && isReading
        if quiesce { held.quiesce = false }
        let read = held.read
        held.read = false
        return quiesce || read ? .pass(quiesce: quiesce, read: read) : .none
    }

    /// The client's end of its input: `true` to pass it on now; otherwise it is held, and
    /// `releaseHeld` says when it goes.
    mutating func inputClosed() -> Bool {
        guard isActive else { return true }
        held.inputClosed = true
        return false
    }

    /// A graceful shutdown's quiesce: `true` to pass it on now, `false` while a POST is
    /// under way (the connection is not idle).
    mutating func quiesce() -> Bool {
        guard isActive, !isReading else { return true }
        held.quiesce = true
        return false
    }

    /// The removed handler's POST still arriving, no longer active.
    mutating func removed() -> Taken? {
        guard case .collecting(let taken) = phase else { return nil }
        phase = .closing
        return taken
    }

    // MARK: Outbound

    /// The handler is asked to read: `true` to read now. While a POST is at the store and
    /// something waits behind it, the read is held.
    mutating func readRequested() -> Bool {
        guard case .writing = phase, received != nil else { return true }
        held.read = true
        return false
    }

    // MARK: Phases

    /// Whether requests are still read here (neither closing nor handed on).
    var isActive: Bool {
        switch phase {
        case .reading, .collecting, .writing: true
        case .closing, .left: false
        }
    }

    private var isReading: Bool {
        if case .reading = phase { true } else { false }
    }
}
