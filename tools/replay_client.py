#!/usr/bin/env python3
"""A dependency-free Python 3 client for replayd, following docs/PROTOCOL.md.

As a library:
    with ReplayConnection("/run/user/1000/replayd.sock") as conn:
        seqs = conn.publish("orders", [b'{"id":1}', b'{"id":2}'])   # pipelined
        for event in conn.subscribe("orders", start="all", count=2):
            print(event.seq, event.payload)
        conn.publish("account-7", [b"opened"], expect=0)            # only onto an empty stream
        conn.publish("payments", [b"p"], producer="billing", epoch=1, pseq=0)   # retry-safe
        conn.publish("orders", [b"o"], trace="00-4bf9...4736-00f0...02b7-01")   # W3C trace context
        conn.publish("customers", [b'{"tier":"gold"}'], key="customer-7")       # a keyed event
        conn.get("customers", "customer-7")                          # its newest event, or None
        job = conn.schedule("jobs", b'{"send":"invoice"}', delay=30)  # appended in 30 s
        conn.scheduled("jobs"); conn.unschedule("jobs", job["id"])    # pending ones; cancel one
        conn.publish_atomically([("a", b"x", None), ("b", b"y", 4)])   # all or none
        for event in conn.subscribe("orders", durable="mailer", count=1):
            print(event.seq)                                         # acknowledged when the next is asked for
        for event in conn.subscribe("orders", hashes=True, count=1):
            print(event.hash)                                        # its hash-chain link
        broken = [r for r in conn.verify() if r.get("broken")]       # hash chains recomputed
        for job in conn.group("jobs", "mailers", ack_wait=30):       # each event to one member
            handle(job.payload)
            job.ack()                                                # or job.nack(delay=5)

A connection that ends, cleanly or in the middle of a frame (the daemon killed), raises
ConnectionError; a refusal by the daemon raises ReplayError.

As a command:
    replay_client.py [--socket PATH] pub STREAM [PAYLOAD ...]   (no payload: lines of stdin)
                     [--expect SEQ | --atomic | --producer ID [--epoch N] [--pseq N]]
    replay_client.py [--socket PATH] sub STREAM [--start all|new|from=N|last=N] [--count N] [--durable NAME]
    replay_client.py [--socket PATH] consumers STREAM
    replay_client.py [--socket PATH] work STREAM --group NAME [--member ID] [--max-pending N] [--count N] [--delay S]
                     (prints "got SEQ" per event, "acking SEQ" as it sends its ACK, "acked SEQ" once committed)
    replay_client.py [--socket PATH] groups STREAM
    replay_client.py [--socket PATH] subscriptions
"""
import json
import argparse
import os
import socket
import sys
import time
from collections import namedtuple

# `traceparent`: the W3C trace context its publisher gave, or None; `hash`: its hash-chain
# link (64 hex digits) for a subscription that asked (`hashes=True`), else None; `key`: the
# key its publisher gave, or None.
Event = namedtuple("Event", "stream sid seq time payload traceparent hash key", defaults=(None, None, None))


def _word(words, key):
    """The `key=` word after an EVENT line's size, if any (other key=value words are skipped)."""
    for word in words[6:]:
        if word.startswith(key):
            return word[len(key):].decode()
    return None


def _trace(words):
    return _word(words, b"trace=")


def _annotations(trace, key, ttl=None):
    """A PUB's key=, trace= and ttl= words (each with its space), or nothing."""
    words = b"" if key is None else b"key=%s " % key.encode()
    words += b"" if ttl is None else b"ttl=%s " % str(ttl).encode()
    return words + (b"" if trace is None else b"trace=%s " % trace.encode())


def _stopped(words):
    """An ERROR frame's error: the subscription stopped on the server's side (a corrupt event)."""
    return ReplayError(words[3].decode(), b" ".join(words[4:]).decode())


class ReplayError(Exception):
    """An -ERR reply, a subscription's ERROR frame, or a FAILED stream."""

    def __init__(self, code, message):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


def default_socket():
    if os.environ.get("REPLAY_SOCKET"):
        return os.environ["REPLAY_SOCKET"]
    if os.environ.get("XDG_RUNTIME_DIR"):
        return os.path.join(os.environ["XDG_RUNTIME_DIR"], "replayd.sock")
    return f"/tmp/replayd-{os.getuid()}.sock"


class ReplayConnection:
    def __init__(self, path=None):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path or default_socket())
        self.reader = self.sock.makefile("rb")
        self._sid = 0
        hello = self._line()
        if hello[0] != b"HELLO":
            raise ReplayError("bad_frame", f"expected HELLO, got {hello!r}")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self.reader.close()
        self.sock.close()

    # -- framing -------------------------------------------------------------------------
    # A connection that closes mid-frame (the daemon killed, the network gone) leaves a
    # partial line or a short payload; both are ConnectionError, like a clean close, so a
    # caller has one exception to catch for "this connection is over".
    _PAYLOAD_WORD = {b"+INFO": 1, b"+LIST": 1, b"EVENT": 5, b"FAILED": 4}
    _MIN_WORDS = {b"+OK": 1, b"EVENT": 6, b"FAILED": 5, b"GAP": 5, b"COMPLETED": 4, b"-ERR": 2, b"ERROR": 4}

    def _line(self):
        line = self.reader.readline()
        if not line:
            raise ConnectionError("replayd closed the connection")
        if not line.endswith(b"\n"):
            raise ConnectionError(f"replayd closed the connection mid-frame (partial line {line[:60]!r})")
        words = line.rstrip(b"\r\n").split()
        if not words:
            raise ConnectionError("replayd sent an empty line: the stream of frames cannot be trusted")
        return words

    def _payload(self, size):
        data = self.reader.read(size)
        if len(data) < size:
            raise ConnectionError(f"replayd closed the connection mid-frame ({len(data)} of {size} payload bytes)")
        end = self.reader.read(2 if self.reader.peek(1)[:1] == b"\r" else 1)
        if not end.endswith(b"\n"):
            raise ConnectionError("replayd closed the connection mid-frame (payload not terminated)")
        return data

    def _frame(self):
        """The next frame as (verb, words, payload-or-None)."""
        words = self._line()
        if len(words) < self._MIN_WORDS.get(words[0], 1):
            raise ConnectionError(f"replayd sent a truncated {words[0].decode(errors='replace')} frame: {b' '.join(words)!r}")
        verb = words[0].decode()
        payload = None
        index = self._PAYLOAD_WORD.get(words[0])
        if index is not None:
            if len(words) <= index or not words[index].isdigit():
                raise ConnectionError(f"replayd sent a malformed {verb} frame: {b' '.join(words)!r}")
            payload = self._payload(int(words[index]))
        return verb, words, payload

    @staticmethod
    def _check(verb, words):
        if verb == "-ERR":
            raise ReplayError(words[1].decode(), b" ".join(words[2:]).decode())

    # -- commands ------------------------------------------------------------------------
    @staticmethod
    def _pub(stream, payload, options=b""):
        data = payload.encode() if isinstance(payload, str) else payload
        return b"PUB %s %s%d\r\n%s\r\n" % (stream.encode(), options, len(data), data)

    def publish(self, stream, payloads, expect=None, producer=None, epoch=0, pseq=0, trace=None, key=None, ttl=None):
        """Publishes every payload (bytes or str) pipelined; returns their sequence numbers.

        expect=SEQ: one atomic send, stored only if the stream's last sequence number is SEQ
        (0: empty or new), else ReplayError("wrong_last_seq", ...).
        producer=ID: an idempotent producer's events, pseqs from `pseq` in `epoch`: a retry
        of committed ones is answered with their original sequence numbers.
        trace=TRACEPARENT: the events' W3C trace context, given back to their readers.
        key=KEY: the events' key (an empty payload is the key's tombstone).
        ttl=SECONDS: the events expire that long after they are appended: no reader is
        given one then (a reader that asked for it is told of a gap)."""
        if expect is not None:
            return self.publish_atomically([(stream, p, expect if i == 0 else None) for i, p in enumerate(payloads)],
                                           trace=trace, key=key, ttl=ttl)
        traced = _annotations(trace, key, ttl)
        out = bytearray()
        for index, payload in enumerate(payloads):
            options = b"" if producer is None else b"producer=%s epoch=%d pseq=%d " % (producer.encode(), epoch, pseq + index)
            out += self._pub(stream, payload, options + traced)
        self.sock.sendall(out)
        seqs = []
        for _ in payloads:
            verb, words, _ = self._frame()
            self._check(verb, words)
            seqs.append(int(words[1]))
        return seqs

    def publish_atomically(self, events, trace=None, key=None, ttl=None):
        """Publishes (stream, payload, expect-or-None) events all or none; returns their
        sequence numbers. A failed check raises ReplayError and stores nothing."""
        traced = _annotations(trace, key, ttl)
        out = bytearray(b"ATOMIC %d\r\n" % len(events))
        for stream, payload, expect in events:
            out += self._pub(stream, payload, (b"" if expect is None else b"expect=%d " % expect) + traced)
        self.sock.sendall(out)
        verb, words, _ = self._frame()
        self._check(verb, words)
        return [int(word) for word in words[1:]]

    def consumers(self, stream):
        """The stream's durable consumers: dicts with name, acked_seq, lag, created_at, updated_at."""
        self.sock.sendall(f"CONSUMERS {stream}\r\n".encode())
        verb, words, payload = self._frame()
        self._check(verb, words)
        return json.loads(payload)

    def subscribe(self, stream, start="all", count=None, on_gap=None, durable=None, hashes=False):
        """Yields the stream's events; stops after `count`, at COMPLETED, raises at FAILED
        and at an ERROR frame (`corrupt_event`: the next event failed its hash chain's check).
        Gaps (history removed by retention) go to `on_gap(first, last)`, else to stderr.
        hashes=True: each Event's `hash` is its hash-chain link.

        durable=NAME: read as that durable consumer (after its acknowledged position, from
        `start` on first use); each event is acknowledged once the next one is asked for,
        and the acknowledgements are confirmed before the generator ends."""
        self._sid += 1
        sid = f"py{self._sid}"
        suffix = (f" durable={durable}" if durable else "") + (" hash=on" if hashes else "")
        self.sock.sendall(f"SUB {stream} {sid} {start}{suffix}\r\n".encode())
        verb, words, _ = self._frame()
        self._check(verb, words)
        received = 0
        unconfirmed = 0
        try:
            while count is None or received < count:
                verb, words, payload = self._frame()
                if verb == "EVENT" and words[2].decode() == sid:
                    received += 1
                    yield Event(words[1].decode(), sid, int(words[3]), words[4].decode(), payload, _trace(words), _word(words, b"hash="),
                                _word(words, b"key="))
                    if durable:
                        self.sock.sendall(b"ACK %s %d\r\n" % (sid.encode(), int(words[3])))
                        unconfirmed += 1
                    continue
                if verb in ("+OK", "-ERR") and unconfirmed:
                    unconfirmed -= 1
                    self._check(verb, words)
                    continue
                elif verb == "COMPLETED":
                    return
                elif verb == "FAILED":
                    raise ReplayError("stream_failed", payload.decode(errors="replace"))
                elif verb == "ERROR" and words[2].decode() == sid:
                    raise _stopped(words)
                elif verb == "GAP":
                    if on_gap:
                        on_gap(int(words[3]), int(words[4]))
                    else:
                        print(f"gap: events {int(words[3])}...{int(words[4])} are no longer retained", file=sys.stderr)
        finally:
            while unconfirmed:
                verb, words, _ = self._frame()
                if verb in ("+OK", "-ERR"):
                    unconfirmed -= 1
                    self._check(verb, words)

    def group(self, stream, group, member=None, start="all", ack_wait=None, max_deliver=None, dead_letter=None,
              max_pending=None, hashes=False):
        """Joins a consumer group of the stream (created on first use at `start`) and yields
        the events handed to this member, each a GroupEvent with ack() and nack(delay=None):
        acknowledge each, or give it back to be handed out again (to any member). Replies to
        them are read with the next events; a refused one raises ReplayError there. Close the
        connection to leave: what this member held goes to the others. hashes=True: each
        GroupEvent's `hash` is its hash-chain link."""
        self._sid += 1
        sid = f"py{self._sid}"
        words = [f"group={group}"]
        for key, value in (("member", member), ("ack_wait", ack_wait), ("max_deliver", max_deliver),
                           ("dead_letter", dead_letter), ("max_pending", max_pending)):
            if value is not None:
                words.append(f"{key}={value}")
        if hashes:
            words.append("hash=on")
        self.sock.sendall(f"SUB {stream} {sid} {start} {' '.join(words)}\r\n".encode())
        verb, words, _ = self._frame()
        self._check(verb, words)
        owed = []      # callbacks for the ACK/NACK replies to come, in order
        while True:
            verb, words, payload = self._frame()
            if verb == "EVENT" and words[2].decode() == sid:
                yield GroupEvent(self, sid, owed, words[1].decode(), int(words[3]), words[4].decode(), payload, _trace(words),
                                 _word(words, b"hash="), _word(words, b"key="))
            elif verb in ("+OK", "-ERR") and owed:
                done, refused = owed.pop(0)
                if verb == "-ERR" and refused:
                    refused(ReplayError(words[1].decode(), b" ".join(words[2:]).decode()))
                    continue
                self._check(verb, words)
                if done:
                    done()
            elif verb == "COMPLETED":
                return
            elif verb == "FAILED":
                raise ReplayError("stream_failed", payload.decode(errors="replace"))
            elif verb == "ERROR" and words[2].decode() == sid:
                raise _stopped(words)

    def subscriptions(self):
        """The Durable Streams subscriptions made over HTTP: dicts with id, type, pattern,
        generation, holder, lease_until, failures, streams (each with acked_seq and lag)…"""
        return self._json("SUBSCRIPTIONS")

    def groups(self, stream):
        """The stream's consumer groups: dicts with name, members, pending, delivered,
        redelivered, dead_lettered, oldest_pending_ms, lag… (docs/PROTOCOL.md)."""
        return self._json(f"GROUPS {stream}")

    def pending(self, stream, group):
        """The group's pending events: dicts with seq, member, deliveries, idle_ms…"""
        return self._json(f"PENDING {stream} {group}")

    def _json(self, line):
        self.sock.sendall(f"{line}\r\n".encode())
        verb, words, payload = self._frame()
        self._check(verb, words)
        return json.loads(payload)

    def get(self, stream, key):
        """The newest event of `key` in `stream` as a dict (stream, key, seq, time, and
        payload or payload_base64); None when there is none or it is the key's tombstone."""
        try:
            return self._json(f"GET {stream} {key}")
        except ReplayError as error:
            if error.code == "unknown_key":
                return None
            raise

    def schedule(self, stream, payload, delay=None, at=None, key=None, trace=None, ttl=None):
        """Stores one event (bytes or str) to be appended to `stream` after `delay` seconds
        or at `at` (an RFC 3339 time), to live `ttl` seconds from then if given; returns a
        dict with its id, stream, due and created."""
        if (delay is None) == (at is None):
            raise ValueError("give delay= or at=")
        when = b"delay=%s " % str(delay).encode() if delay is not None else b"at=%s " % at.encode()
        self.sock.sendall(self._pub(stream, payload, _annotations(trace, key, ttl) + when))
        verb, words, body = self._frame()
        self._check(verb, words)
        return json.loads(body)

    def scheduled(self, stream, limit=100):
        """The stream's pending scheduled events, earliest due first: dicts with id, due,
        created, key, size and payload (or payload_base64)."""
        return self._json(f"SCHEDULED {stream} {limit}")

    def unschedule(self, stream, id):
        """Cancels a pending scheduled event; ReplayError("unknown_scheduled") if it was
        already appended or cancelled."""
        self.sock.sendall(f"UNSCHEDULE {stream} {id}\r\n".encode())
        verb, words, _ = self._frame()
        self._check(verb, words)

    def verify(self, *streams, through=None):
        """Has the daemon recompute hash chains (every stream's without names): one dict per
        stream with stream, first, last, events, bytes, lastHash, and broken (sequence,
        expected, found) at the first event that does not match."""
        words = ["VERIFY", *streams] + ([f"through={through}"] if through is not None else [])
        return self._json(" ".join(words))

    def ping(self):
        self.sock.sendall(b"PING\r\n")
        verb, words, _ = self._frame()
        self._check(verb, words)
        return verb == "PONG"


class GroupEvent:
    """An event handed to a group member: ack() it once handled, or nack() it back."""

    def __init__(self, conn, sid, owed, stream, seq, time, payload, traceparent=None, hash=None, key=None):
        self._conn, self._sid, self._owed = conn, sid, owed
        self.stream, self.seq, self.time, self.payload = stream, seq, time, payload
        self.traceparent, self.hash, self.key = traceparent, hash, key

    def ack(self, then=None, refused=None):
        """Acknowledges this event; `then()` runs once the daemon committed it. A refusal
        (it is no longer held: its time ran out) goes to `refused(error)`, else it raises."""
        self._conn.sock.sendall(b"ACK %s %d\r\n" % (self._sid.encode(), self.seq))
        self._owed.append((then, refused))

    def nack(self, delay=None, then=None, refused=None):
        """Gives it back, to be handed out again after `delay` seconds."""
        suffix = b"" if delay is None else b" delay=%s" % str(delay).encode()
        self._conn.sock.sendall(b"NACK %s %d%s\r\n" % (self._sid.encode(), self.seq, suffix))
        self._owed.append((then, refused))


def main(argv=None):
    parser = argparse.ArgumentParser(description="Publish to and subscribe to replayd streams.")
    parser.add_argument("--socket", default=None)
    commands = parser.add_subparsers(dest="command", required=True)
    pub = commands.add_parser("pub")
    pub.add_argument("stream")
    pub.add_argument("payloads", nargs="*")
    pub.add_argument("--expect", type=int, default=None)
    pub.add_argument("--atomic", action="store_true")
    pub.add_argument("--producer", default=None)
    pub.add_argument("--epoch", type=int, default=0)
    pub.add_argument("--pseq", type=int, default=0)
    sub = commands.add_parser("sub")
    sub.add_argument("stream")
    sub.add_argument("--start", default="all")
    sub.add_argument("--count", type=int, default=None)
    sub.add_argument("--durable", default=None)
    consumers = commands.add_parser("consumers")
    consumers.add_argument("stream")
    work = commands.add_parser("work")
    work.add_argument("stream")
    work.add_argument("--group", required=True)
    work.add_argument("--member", default=None)
    work.add_argument("--max-pending", type=int, default=None)
    work.add_argument("--count", type=int, default=None)
    work.add_argument("--delay", type=float, default=0, help="seconds of 'work' per event before its ACK")
    groups = commands.add_parser("groups")
    groups.add_argument("stream")
    commands.add_parser("subscriptions")
    args = parser.parse_args(argv)
    try:
        with ReplayConnection(args.socket) as conn:
            if args.command == "pub":
                payloads = args.payloads or [line.rstrip("\n") for line in sys.stdin]
                if args.atomic and args.expect is None:
                    seqs = conn.publish_atomically([(args.stream, p, None) for p in payloads])
                else:
                    seqs = conn.publish(args.stream, payloads, expect=args.expect, producer=args.producer,
                                        epoch=args.epoch, pseq=args.pseq)
                for seq in seqs:
                    print(seq)
            elif args.command == "work":
                acked = []
                for job in conn.group(args.stream, args.group, member=args.member, max_pending=args.max_pending):
                    print(f"got {job.seq}", flush=True)
                    if args.delay:
                        time.sleep(args.delay)
                    print(f"acking {job.seq}", flush=True)   # before the ACK leaves: a crash can't hide one
                    job.ack(then=lambda seq=job.seq: (acked.append(seq), print(f"acked {seq}", flush=True)))
                    if args.count is not None and len(acked) >= args.count:
                        break
            elif args.command == "subscriptions":
                print(json.dumps(conn.subscriptions(), sort_keys=True))
            elif args.command == "groups":
                print(json.dumps(conn.groups(args.stream), sort_keys=True))
            elif args.command == "consumers":
                for consumer in conn.consumers(args.stream):
                    print(consumer["name"], consumer["acked_seq"], consumer["lag"])
            else:
                for event in conn.subscribe(args.stream, args.start, args.count, durable=args.durable):
                    sys.stdout.buffer.write(event.payload + b"\n")
                    sys.stdout.flush()
    except (FileNotFoundError, ConnectionRefusedError) as error:
        print(f"replayd is not running on {args.socket or default_socket()}: {error}", file=sys.stderr)
        return 3
    except ReplayError as error:
        print(error, file=sys.stderr)
        return 2 if error.code == "stream_failed" else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
