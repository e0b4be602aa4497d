#!/usr/bin/env python3
"""Appends to and reads from replayd with a client nobody here wrote: the `durable-streams`
package from PyPI, over replayd's HTTP front door, beside the socket protocol.

  python3 tools/durable_streams_client_check.py --replayd .build/debug/replayd
Exit status 0 and a JSON summary on success; 1 and the reason otherwise.
"""
import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from replay_client import ReplayConnection  # noqa: E402
import httpx  # noqa: E402 - the client's own dependency
from durable_streams import DurableStream, DurableStreamError, StreamNotFoundError  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--replayd", required=True)
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="replay-ds-")
    port = free_port()
    log = open(folder + "/replayd.log", "wb")
    daemon = subprocess.Popen(
        [args.replayd, "--socket", folder + "/s.sock", "--db", folder + "/db.sqlite", "--http", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=log)
    try:
        for _ in range(1500):
            if b"http listening" in open(folder + "/replayd.log", "rb").read():
                break
            time.sleep(0.02)
        base = f"http://127.0.0.1:{port}/v1/stream/"
        summary = {}

        # JSON mode: each append is a message; a read is the array of them.
        orders = DurableStream.create(base + "py/orders", content_type="application/json")
        orders.append({"order": 1})
        orders.append({"order": 2})
        # The client sends each value wrapped in an array: a list is one message.
        orders.append([3, "three"])
        with orders.stream(offset="-1", live=False) as response:
            messages = list(response.iter_json())
            assert response.up_to_date, "a read to the end is up to date"
            tail = response.offset
        assert messages == [{"order": 1}, {"order": 2}, [3, "three"]], messages
        assert orders.head().offset == tail
        summary["json"] = messages

        # The same stream over the socket: the three messages are events 1-3.
        with ReplayConnection(folder + "/s.sock") as connection:
            seen = [(event.seq, event.payload) for event in connection.subscribe("py/orders", start="all", count=3)]
        with ReplayConnection(folder + "/s.sock") as connection:
            connection.publish("py/orders", [b'{"order": 4}'])
        assert [seq for seq, _ in seen] == [1, 2, 3], seen
        assert seen[0][1] == b'{"order":1}' or json.loads(seen[0][1]) == {"order": 1}, seen
        with orders.stream(offset=tail, live=False) as response:
            assert list(response.iter_json()) == [{"order": 4}]
        summary["socket_then_http"] = True

        # Live reads: SSE and long-poll wake on an append made meanwhile.
        text = DurableStream.create(base + "py/text", content_type="text/plain")
        text.append("hello ")
        at = text.head().offset
        threading.Timer(0.3, lambda: text.append("world")).start()
        with text.stream(offset=at, live="sse") as response:
            live_sse = next(iter(response.iter_text()))
        assert live_sse == "world", live_sse
        at = text.head().offset
        threading.Timer(0.3, lambda: text.append("!")).start()
        with text.stream(offset=at, live="long-poll") as response:
            live_poll = next(iter(response.iter_text()))
        assert live_poll == "!", live_poll
        with text.stream(offset="-1", live=False) as response:
            summary["text"] = response.read_text()
        assert summary["text"] == "hello world!", summary["text"]

        # Closing (this client has no call for it, so plain HTTP, as the protocol says) and
        # deleting.
        closed = httpx.post(base + "py/text", headers={"Stream-Closed": "true"})
        assert closed.status_code == 204 and closed.headers.get("Stream-Closed") == "true", closed
        try:
            text.append("more")
            raise AssertionError("a closed stream took an append")
        except DurableStreamError:
            pass
        text.delete()
        try:
            text.head()
            raise AssertionError("a deleted stream still answers HEAD")
        except StreamNotFoundError:
            pass
        summary["deleted"] = True
        print(json.dumps(summary))
        return 0
    except Exception as error:  # noqa: BLE001 - report any failure with the daemon's log
        print(f"durable-streams client check failed: {error!r}", file=sys.stderr)
        log.flush()
        print(open(folder + "/replayd.log", encoding="utf-8", errors="replace").read()[-3000:], file=sys.stderr)
        return 1
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(30)


if __name__ == "__main__":
    sys.exit(main())
