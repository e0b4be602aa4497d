#!/usr/bin/env python3
"""Drives `replayctl top` through a pseudo-terminal against the real replayd.

Publishes steadily to one stream while top runs in a 30x100 pty, reads its frames until one
shows that stream with a publish rate above zero, presses `s` (the order changes to lag),
then `q`, and checks that top exits 0 and leaves the alternate screen. No timing is
asserted: it waits for what the screen shows, with a generous deadline.

  python3 tools/top_check.py --replayctl .build/debug/replayctl --socket PATH
Exit status 0 and a JSON summary on success; 1 and the reason otherwise.
"""
import argparse
import fcntl
import json
import os
import pty
import re
import select
import struct
import sys
import termios
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from replay_client import ReplayConnection  # noqa: E402

DEADLINE = 60.0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--replayctl", required=True)
    parser.add_argument("--socket", required=True)
    args = parser.parse_args()

    stop = threading.Event()

    def publish():
        with ReplayConnection(args.socket) as connection:
            while not stop.is_set():
                connection.publish("top/busy", [b"x"] * 20)
                time.sleep(0.05)

    with ReplayConnection(args.socket) as connection:
        connection.publish("top/quiet", [b"q"])
    publisher = threading.Thread(target=publish)
    publisher.start()
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(args.replayctl, [args.replayctl, "top", "--socket", args.socket, "--interval", "0.3"])
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    screen = b""

    def read_until(pattern, what):
        nonlocal screen
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.2)
            if ready:
                try:
                    screen += os.read(fd, 65536)
                except OSError:
                    break
            frames = screen.split(b"\x1b[H\x1b[2J")
            match = re.search(pattern, frames[-1] if len(frames) > 1 else b"")
            if match:
                return frames[-1].decode(errors="replace")
        raise RuntimeError(f"gave up waiting for {what}; last screen: {screen[-2000:]!r}")

    try:
        busy = read_until(rb"top/busy +[1-9][0-9.k]* ", "a frame with top/busy publishing")
        os.write(fd, b"s")
        by_lag = read_until(rb"by lag", "the order to change to lag")
        os.write(fd, b"q")
        _, status = os.waitpid(pid, 0)
        try:
            while True:
                ready, _, _ = select.select([fd], [], [], 0.2)
                if not ready:
                    break
                screen += os.read(fd, 65536)
        except OSError:
            pass
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            raise RuntimeError(f"replayctl top exited {code}")
        print(json.dumps({
            "busy_row": next(line for line in busy.split("\r\n") if line.startswith("top/busy")),
            "header": busy.split("\r\n")[0],
            "by_lag": "by lag" in by_lag,
            "left_alternate_screen": screen.rstrip(b"\r\n").endswith(b"\x1b[?1049l"),
            "exit": code,
        }))
        return 0
    except Exception as error:  # noqa: BLE001
        print(f"top check failed: {error}", file=sys.stderr)
        try:
            os.kill(pid, 9)
        except OSError:
            pass
        return 1
    finally:
        stop.set()
        publisher.join()


if __name__ == "__main__":
    sys.exit(main())
