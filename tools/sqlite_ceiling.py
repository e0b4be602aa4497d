#!/usr/bin/env python3
"""The ceiling SQLite puts on replay's publish path on this machine, for each event layout.

(A loop in Python measures Python as much as SQLite: tools/sqlite_ceiling.c measures the
current layout from C, over several streams and at the writer's real batch sizes.)

Inserts 100-byte events into fresh databases, in WAL mode, in transactions of the sizes
group commit produces, from C (executemany), with nothing else running: no socket, no
framing, no acknowledgements. replay's writer does this work and more, on one thread, so
no publish figure can pass it. Each layout is measured in turn, interleaved over rounds so
that the disk's moods fall on all of them alike; the median of the rounds is printed.

Layouts (the first is schema v1, kept for comparison; `current` is what migrations/ makes):
  v1-text-time-index  WITHOUT ROWID (stream_id, seq) key, TEXT time, (stream_id, time) index
  v1-no-time-index    the same without the time index
  pair-int-time       WITHOUT ROWID (stream_id, seq) key, INTEGER time, no secondary index
  rowid-key           one INTEGER PRIMARY KEY = (stream id << 40) | seq, INTEGER time
  current             migrations/*.sql as they are

With --since it also measures the two ways of finding where `since=<time>` starts without a
per-event time index: a binary search on seq over monotonic commit times (no extra write),
and a `commits` table with one row per (stream, commit) (one extra row per transaction).

    python3 tools/sqlite_ceiling.py [--events 300000] [--rounds 3] [--sync full|off] [--since]
"""
import argparse
import glob
import os
import sqlite3
import statistics
import tempfile
import time

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--events", type=int, default=300_000, help="events per measurement (batches of 100 and 1000)")
parser.add_argument("--rounds", type=int, default=3)
parser.add_argument("--sync", choices=["full", "off"], default="full")
parser.add_argument("--batches", default="1,100,1000", help="events per transaction, comma-separated")
parser.add_argument("--since", action="store_true", help="also compare the two ways to find a since= start")
args = parser.parse_args()

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
current_schema = "".join(open(p).read() for p in sorted(glob.glob(os.path.join(root, "migrations", "*.sql"))))
payload = b"x" * 100
stamp = "2026-11-22T00:00:00.000Z"
millis = 1_763_769_600_000
SHIFT = 40

STREAMS = "CREATE TABLE streams (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, created_at TEXT NOT NULL);"
LAYOUTS = {
    "v1-text-time-index": (
        STREAMS + """CREATE TABLE event_log (stream_id INTEGER NOT NULL, seq INTEGER NOT NULL, time TEXT NOT NULL,
                         payload BLOB NOT NULL, PRIMARY KEY (stream_id, seq)) WITHOUT ROWID;
                     CREATE INDEX event_log_by_time ON event_log (stream_id, time);""",
        "INSERT INTO event_log (stream_id, seq, time, payload) VALUES (1, ?, ?, ?)",
        lambda seq: (seq, stamp, payload)),
    "v1-no-time-index": (
        STREAMS + """CREATE TABLE event_log (stream_id INTEGER NOT NULL, seq INTEGER NOT NULL, time TEXT NOT NULL,
                         payload BLOB NOT NULL, PRIMARY KEY (stream_id, seq)) WITHOUT ROWID;""",
        "INSERT INTO event_log (stream_id, seq, time, payload) VALUES (1, ?, ?, ?)",
        lambda seq: (seq, stamp, payload)),
    "pair-int-time": (
        STREAMS + """CREATE TABLE event_log (stream_id INTEGER NOT NULL, seq INTEGER NOT NULL, time INTEGER NOT NULL,
                         payload BLOB NOT NULL, PRIMARY KEY (stream_id, seq)) WITHOUT ROWID;""",
        "INSERT INTO event_log (stream_id, seq, time, payload) VALUES (1, ?, ?, ?)",
        lambda seq: (seq, millis, payload)),
    "rowid-key": (
        STREAMS + "CREATE TABLE event_log (key INTEGER PRIMARY KEY, time INTEGER NOT NULL, payload BLOB NOT NULL);",
        "INSERT INTO event_log (key, time, payload) VALUES (?, ?, ?)",
        lambda seq: ((1 << SHIFT) | seq, millis, payload)),
}


def current_layout():
    """What migrations/ makes today, found by inspecting the schema it creates."""
    db = sqlite3.connect(":memory:")
    db.executescript(current_schema)
    columns = [row[1] for row in db.execute("PRAGMA table_info(event_log)")]
    db.close()
    if "key" in columns:
        return "INSERT INTO event_log (key, time, payload) VALUES (?, ?, ?)", lambda seq: ((1 << SHIFT) | seq, millis, payload)
    return "INSERT INTO event_log (stream_id, seq, time, payload) VALUES (1, ?, ?, ?)", lambda seq: (seq, stamp, payload)


def open_db(path, schema, seed_stream=True):
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(f"PRAGMA synchronous={args.sync.upper()}")
    db.executescript(schema)
    if seed_stream:
        db.execute("INSERT INTO streams (id, name, created_at) VALUES (1, 's', ?)", (stamp,))
    return db


def measure(folder, name, schema, insert, row, batch, extra=None):
    path = os.path.join(folder, f"{name}-{batch}-{time.monotonic_ns()}.sqlite")
    db = open_db(path, schema)
    count = min(args.events, 20_000) if batch == 1 else args.events
    start = time.perf_counter()
    seq = 0
    while seq < count:
        db.execute("BEGIN IMMEDIATE")
        db.executemany(insert, (row(seq + i + 1) for i in range(batch)))
        if extra:
            extra(db, seq + 1)
        db.execute("COMMIT")
        seq += batch
    rate = count / (time.perf_counter() - start)
    db.close()
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    return rate


def since_comparison(folder):
    """Inserts with a commits table vs without; then the cost of finding a since= start."""
    commits = "CREATE TABLE commits (stream_id INTEGER NOT NULL, time INTEGER NOT NULL, first_seq INTEGER NOT NULL, PRIMARY KEY (stream_id, time, first_seq)) WITHOUT ROWID;"
    schema, insert, row = LAYOUTS["rowid-key"]

    def add_commit(db, first):
        db.execute("INSERT INTO commits VALUES (1, ?, ?)", (millis + first, first))

    for batch in (1, 100):
        plain = [measure(folder, "since-plain", schema, insert, row, batch) for _ in range(args.rounds)]
        table = [measure(folder, "since-table", schema + commits, insert, row, batch, add_commit) for _ in range(args.rounds)]
        print(f"  {batch:>5}/txn: binary search (no extra write) {statistics.median(plain):>9,.0f} events/s;"
              f" commits table {statistics.median(table):>9,.0f} events/s")

    # Lookups on 1,000,000 events in commits of 100, times increasing by 1 ms per commit.
    path = os.path.join(folder, "since-lookups.sqlite")
    db = open_db(path, schema + commits)
    db.execute("BEGIN")
    n = 1_000_000
    db.executemany("INSERT INTO event_log (key, time, payload) VALUES (?, ?, ?)",
                   (((1 << SHIFT) | s, millis + (s - 1) // 100, payload) for s in range(1, n + 1)))
    db.executemany("INSERT INTO commits VALUES (1, ?, ?)", ((millis + c, c * 100 + 1) for c in range(n // 100)))
    db.execute("COMMIT")
    targets = [millis + (i * 7919) % (n // 100) for i in range(2000)]

    def binary_search(t):
        lo, hi = 1, n + 1
        while lo < hi:
            mid = (lo + hi) // 2
            if db.execute("SELECT time FROM event_log WHERE key = ?", ((1 << SHIFT) | mid,)).fetchone()[0] >= t:
                hi = mid
            else:
                lo = mid + 1
        return lo

    def table_lookup(t):
        found = db.execute("SELECT first_seq FROM commits WHERE stream_id = 1 AND time >= ? ORDER BY time, first_seq LIMIT 1", (t,)).fetchone()
        return found[0] if found else n + 1

    for name, lookup in (("binary search", binary_search), ("commits table", table_lookup)):
        start = time.perf_counter()
        results = [lookup(t) for t in targets]
        elapsed = (time.perf_counter() - start) / len(targets)
        print(f"  since= lookup on 1,000,000 events, {name}: {elapsed * 1e6:,.1f} µs")
        assert results == [binary_search(t) for t in targets[:50]] + results[50:], "the two lookups disagree"
    db.close()


with tempfile.TemporaryDirectory() as folder:
    batches = [int(b) for b in args.batches.split(",")]
    layouts = dict(LAYOUTS)
    insert, row = current_layout()
    layouts["current"] = (current_schema, insert, row)
    print(f"SQLite {sqlite3.sqlite_version}, WAL, synchronous={args.sync.upper()}, 100-byte events, "
          f"median of {args.rounds} interleaved rounds (events/s)")
    print(f"{'layout':<20}" + "".join(f"{f'{b}/txn':>12}" for b in batches))
    results = {name: {b: [] for b in batches} for name in layouts}
    for _ in range(args.rounds):
        for batch in batches:
            for name, (schema, insert, row) in layouts.items():
                results[name][batch].append(measure(folder, name, schema, insert, row, batch))
    for name in layouts:
        print(f"{name:<20}" + "".join(f"{statistics.median(results[name][b]):>12,.0f}" for b in batches))
    if args.since:
        print("since= without a per-event time index (rowid-key layout):")
        since_comparison(folder)
