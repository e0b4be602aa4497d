#!/usr/bin/env python3
"""Soak: a mixed load against the real replayd for a chosen duration, sampling the
daemon's resident memory and open file descriptors every few seconds.

Load: pipelined publishers on capacity-limited streams, live subscribers that come and go,
catch-up readers, and a refcount source whose subscribers churn (so it starts and stops).
Passes if, over the second half of the run, neither RSS nor descriptors grew beyond the
first half's high-water mark (with a small allowance for RSS).

    tools/soak.py [--replayd PATH] [--minutes M] [--sample-seconds S]
"""
import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from replay_client import ReplayConnection  # noqa: E402


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def publisher(sock, stop, stats, ident):
    n = 0
    while not stop.is_set():
        try:
            with ReplayConnection(sock) as conn:
                while not stop.is_set():
                    batch = [f"p{ident}-{n + i}-".encode() + b"x" * 100 for i in range(100)]
                    n += len(batch)
                    conn.publish(random.choice(["orders", "metrics", "logs"]), batch)
                    stats["published"] += len(batch)
        except OSError:
            time.sleep(0.1)


def churning_subscriber(sock, stop, stats, stream, start):
    while not stop.is_set():
        try:
            with ReplayConnection(sock) as conn:
                def gap(first, last):
                    stats["gaps"] += 1  # a reader slower than retention: expected, counted
                for _ in conn.subscribe(stream, start, count=random.randint(100, 5000), on_gap=gap):
                    stats["delivered"] += 1
                    if stop.is_set():
                        return
        except OSError:
            time.sleep(0.1)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    default = next((p for p in (f"{root}/.build/release/replayd", f"{root}/.build/debug/replayd") if os.path.exists(p)), "replayd")
    parser.add_argument("--replayd", default=default)
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--sample-seconds", type=float, default=5)
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="replay-soak-") as directory:
        sock = os.path.join(directory, "replayd.sock")
        proc = subprocess.Popen([args.replayd, "--socket", sock, "--db", os.path.join(directory, "soak.sqlite"),
                                 "--sync", "full", "--default-capacity", "20000"],
                                stdout=subprocess.DEVNULL, stderr=open(os.path.join(directory, "log"), "wb"))
        for _ in range(500):
            if os.path.exists(sock):
                break
            time.sleep(0.02)
        with ReplayConnection(sock) as conn:
            source = b"while true; do date +%s.%N; sleep 0.01; done"
            conn.sock.sendall(b"CREATE clock capacity=1000 connect=refcount source=%d grace=1\r\n%s\r\n" % (len(source), source))
            conn._frame()

        stop = threading.Event()
        stats = {"published": 0, "delivered": 0, "gaps": 0}
        threads = [threading.Thread(target=publisher, args=(sock, stop, stats, i)) for i in range(3)]
        threads += [threading.Thread(target=churning_subscriber, args=(sock, stop, stats, s, start))
                    for s, start in [("orders", "new"), ("metrics", "last=1000"), ("logs", "all"), ("clock", "new"), ("clock", "new")]]
        for thread in threads:
            thread.daemon = True
            thread.start()

        samples = []
        began = time.time()
        print(f"{'elapsed s':>9} {'RSS MB':>7} {'fds':>5} {'published':>10} {'delivered':>10}", flush=True)
        while time.time() - began < args.minutes * 60:
            time.sleep(args.sample_seconds)
            sample = (time.time() - began, rss_kb(proc.pid) / 1024, fd_count(proc.pid), stats["published"], stats["delivered"])
            samples.append(sample)
            print(f"{sample[0]:9.0f} {sample[1]:7.1f} {sample[2]:5d} {sample[3]:10d} {sample[4]:10d}", flush=True)
        stop.set()
        proc.send_signal(signal.SIGTERM)
        status = proc.wait(timeout=60)

    half = len(samples) // 2
    first, second = samples[:half], samples[half:]
    rss_first, rss_second = max(s[1] for s in first), max(s[1] for s in second)
    fd_first, fd_second = max(s[2] for s in first), max(s[2] for s in second)
    print(f"RSS high-water: first half {rss_first:.1f} MB, second half {rss_second:.1f} MB")
    print(f"fds high-water: first half {fd_first}, second half {fd_second}")
    print(f"published {stats['published']}, delivered {stats['delivered']}, gap notices {stats['gaps']}, replayd exit status {status}")
    grew = rss_second > rss_first * 1.10 + 2 or fd_second > fd_first + 4
    print("result: " + ("GREW" if grew else "stable"))
    return 1 if grew or status != 0 else 0


if __name__ == "__main__":
    sys.exit(main())
