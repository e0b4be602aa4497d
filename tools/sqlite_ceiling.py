#!/usr/bin/env python3
"""The ceiling SQLite puts on replay's publish path on this machine.

Inserts 100-byte events into a fresh database with replay's own schema (migrations/*.sql),
in WAL mode at synchronous=FULL, in transactions of the sizes group commit produces, from
C (executemany), with nothing else running: no socket, no framing, no acknowledgements.
replay's writer does this work and more, on one thread, so no publish figure can pass it.

    python3 tools/sqlite_ceiling.py [--events 300000] [--without-time-index]
"""
import argparse
import glob
import os
import sqlite3
import tempfile
import time

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--events", type=int, default=300_000)
parser.add_argument("--without-time-index", action="store_true",
                    help="drop the (stream_id, time) index: what one fewer B-tree per event saves")
args = parser.parse_args()

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
schema = "".join(open(path).read() for path in sorted(glob.glob(os.path.join(root, "migrations", "*.sql"))))
payload = b"x" * 100
stamp = "2026-11-22T00:00:00.000Z"

with tempfile.TemporaryDirectory() as folder:
    for batch in (1, 100, 1000):
        path = os.path.join(folder, f"ceiling-{batch}.sqlite")
        db = sqlite3.connect(path, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        db.executescript(schema)
        if args.without_time_index:
            db.execute("DROP INDEX event_log_by_time")
        db.execute("INSERT INTO streams (name, capacity, created_at) VALUES ('s', NULL, ?)", (stamp,))
        count = min(args.events, 20_000) if batch == 1 else args.events
        start = time.perf_counter()
        seq = 0
        while seq < count:
            db.execute("BEGIN IMMEDIATE")
            db.executemany(
                "INSERT INTO event_log (stream_id, seq, time, payload) VALUES (1, ?, ?, ?)",
                ((seq + i + 1, stamp, payload) for i in range(batch)))
            db.execute("COMMIT")
            seq += batch
        rate = count / (time.perf_counter() - start)
        print(f"{batch:>5} events per transaction: {rate:>9,.0f} events/s")
        db.close()
