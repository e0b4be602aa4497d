#!/usr/bin/env python3
"""A dependency-free Python 3 client for replayd, following docs/PROTOCOL.md.

As a library:
    with ReplayConnection("/run/user/1000/replayd.sock") as conn:
        seqs = conn.publish("orders", [b'{"id":1}', b'{"id":2}'])   # pipelined
        for event in conn.subscribe("orders", start="all", count=2):
            print(event.seq, event.payload)

A connection that ends, cleanly or in the middle of a frame (the daemon killed), raises
ConnectionError; a refusal by the daemon raises ReplayError.

As a command:
    replay_client.py [--socket PATH] pub STREAM [PAYLOAD ...]   (no payload: lines of stdin)
    replay_client.py [--socket PATH] sub STREAM [--start all|new|from=N|last=N] [--count N]
"""
import argparse
import os
import socket
import sys
from collections import namedtuple

Event = namedtuple("Event", "stream sid seq time payload")


class ReplayError(Exception):
    """An -ERR reply, or a FAILED stream."""

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
    _MIN_WORDS = {b"+OK": 1, b"EVENT": 6, b"FAILED": 5, b"GAP": 5, b"COMPLETED": 4, b"-ERR": 2}

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
    def publish(self, stream, payloads):
        """Publishes every payload (bytes or str) pipelined; returns their sequence numbers."""
        out = bytearray()
        for payload in payloads:
            data = payload.encode() if isinstance(payload, str) else payload
            out += b"PUB %s %d\r\n%s\r\n" % (stream.encode(), len(data), data)
        self.sock.sendall(out)
        seqs = []
        for _ in payloads:
            verb, words, _ = self._frame()
            self._check(verb, words)
            seqs.append(int(words[1]))
        return seqs

    def subscribe(self, stream, start="all", count=None, on_gap=None):
        """Yields the stream's events; stops after `count`, at COMPLETED, raises at FAILED.
        Gaps (history removed by retention) go to `on_gap(first, last)`, else to stderr."""
        self._sid += 1
        sid = f"py{self._sid}"
        self.sock.sendall(f"SUB {stream} {sid} {start}\r\n".encode())
        verb, words, _ = self._frame()
        self._check(verb, words)
        received = 0
        while count is None or received < count:
            verb, words, payload = self._frame()
            if verb == "EVENT" and words[2].decode() == sid:
                received += 1
                yield Event(words[1].decode(), sid, int(words[3]), words[4].decode(), payload)
            elif verb == "COMPLETED":
                return
            elif verb == "FAILED":
                raise ReplayError("stream_failed", payload.decode(errors="replace"))
            elif verb == "GAP":
                if on_gap:
                    on_gap(int(words[3]), int(words[4]))
                else:
                    print(f"gap: events {int(words[3])}...{int(words[4])} are no longer retained", file=sys.stderr)

    def ping(self):
        self.sock.sendall(b"PING\r\n")
        verb, words, _ = self._frame()
        self._check(verb, words)
        return verb == "PONG"


def main(argv=None):
    parser = argparse.ArgumentParser(description="Publish to and subscribe to replayd streams.")
    parser.add_argument("--socket", default=None)
    commands = parser.add_subparsers(dest="command", required=True)
    pub = commands.add_parser("pub")
    pub.add_argument("stream")
    pub.add_argument("payloads", nargs="*")
    sub = commands.add_parser("sub")
    sub.add_argument("stream")
    sub.add_argument("--start", default="all")
    sub.add_argument("--count", type=int, default=None)
    args = parser.parse_args(argv)
    try:
        with ReplayConnection(args.socket) as conn:
            if args.command == "pub":
                payloads = args.payloads or [line.rstrip("\n") for line in sys.stdin]
                for seq in conn.publish(args.stream, payloads):
                    print(seq)
            else:
                for event in conn.subscribe(args.stream, args.start, args.count):
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
