#!/usr/bin/env python3
"""Crash loop: mixed load against the real replayd, killed with SIGKILL at random moments.

Each round starts replayd on the same database, runs pipelined publishers, live
subscribers that resume from their last sequence + 1, a catch-up reader, an eager source,
an idempotent producer that resends its unacknowledged batch after each restart, another
over HTTP (Producer-Id, -Epoch, -Seq) that resends its unanswered POST, and two
workers of a consumer group on "orders" that acknowledge each event, then kills the daemon
with SIGKILL at a random moment. A last round without a kill lets the workers finish: every
event of "orders" must then have been acknowledged, and no event whose acknowledgement was
confirmed before a kill may be handed out after it. After every kill it checks that every
acknowledged event is stored with its payload, that sequence numbers are contiguous and
unique per stream, that no resuming subscriber saw a gap or a duplicate, that the
producers' events are stored once each, in order, and that PRAGMA integrity_check says
ok. Exits non-zero if anything was lost or duplicated.

    tools/crash_loop.py [--replayd PATH] [--kills N] [--seconds S] [--publishers P]
"""
import argparse
import http.client
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from replay_client import ReplayConnection  # noqa: E402
from verify_checkpoint import recompute  # noqa: E402

PUBLISHED = ["orders", "metrics"]  # by plain publishers
STREAMS = PUBLISHED + ["payments"]  # "payments": the idempotent producer's alone
HTTP_STREAM = "web-payments"  # the HTTP producer's alone


class Ledger:
    """What the daemon acknowledged, and what subscribers saw."""

    def __init__(self):
        self.lock = threading.Lock()
        self.acked = {s: {} for s in STREAMS}
        self.violations = []
        # Readers whose connection the kill cut in the middle of a frame (a partial line or
        # payload): the expected end of their round, counted, never a traceback.
        self.cut_mid_frame = 0
        self.group_acks_sent = set()
        self.group_acks_confirmed = set()
        self.confirmed_before_kill = set()
        self.group_refused = 0
        # Stream chains recomputed after the kills (all held, or a violation says which).
        self.chained = 0

    def cut(self, error):
        if "mid-frame" in str(error) or "truncated" in str(error):
            with self.lock:
                self.cut_mid_frame += 1

    def ack(self, stream, seq, payload, again=False):
        with self.lock:
            if seq in self.acked[stream] and not again:
                self.violations.append(f"{stream}: sequence {seq} acknowledged twice")
            self.acked[stream][seq] = payload

    def violation(self, text):
        with self.lock:
            self.violations.append(text)

    # The consumer group's workers: ACKs sent and confirmed, and those confirmed before the
    # last kill (a restart must not hand those out again).
    def group_sent(self, seq):
        with self.lock:
            self.group_acks_sent.add(seq)

    def group_confirmed(self, seq):
        with self.lock:
            self.group_acks_confirmed.add(seq)

    def group_handed(self, seq, worker):
        with self.lock:
            if seq in self.confirmed_before_kill:
                self.violations.append(f"group: event {seq}, acknowledged before a kill, was handed to {worker} after it")

    def new_round(self):
        with self.lock:
            self.confirmed_before_kill |= self.group_acks_confirmed


def publisher(socket_path, ledger, ident, stop):
    counter = 0
    try:
        with ReplayConnection(socket_path) as conn:
            while not stop.is_set():
                stream = random.choice(PUBLISHED)
                batch = [f"p{ident}-{counter + i}".encode() for i in range(random.randint(1, 64))]
                counter += len(batch)
                for seq, payload in zip(conn.publish(stream, batch), batch):
                    ledger.ack(stream, seq, payload)
    except ConnectionError as error:
        ledger.cut(error)  # the daemon was killed
    except OSError:
        pass


class Retrier:
    """An idempotent producer (id "crash", epoch 0) that resends its batch, with the same
    pseqs, until the daemon answers it: a retry of what was committed before a kill must
    get its original sequence numbers and not be stored again."""

    STREAM = "payments"

    def __init__(self):
        self.next = 0
        self.pending = None
        self.acked = {}  # pseq -> seq
        self.retries = 0

    def run(self, socket_path, ledger, stop):
        try:
            with ReplayConnection(socket_path) as conn:
                while not stop.is_set():
                    if self.pending is None:
                        self.pending = list(range(self.next, self.next + random.randint(1, 32)))
                    else:
                        self.retries += 1
                    batch = [f"r-{pseq}".encode() for pseq in self.pending]
                    seqs = conn.publish(self.STREAM, batch, producer="crash", epoch=0, pseq=self.pending[0])
                    for pseq, seq in zip(self.pending, seqs):
                        if self.acked.get(pseq, seq) != seq:
                            ledger.violation(f"producer: pseq {pseq} got {seq}, earlier {self.acked[pseq]}")
                        self.acked[pseq] = seq
                        ledger.ack(self.STREAM, seq, f"r-{pseq}".encode(), again=pseq in self.acked)
                    self.next = self.pending[-1] + 1
                    self.pending = None
        except ConnectionError as error:
            ledger.cut(error)
        except OSError:
            pass
        except Exception as error:  # a refusal (pseq_gap, stale_epoch) is a violation
            ledger.violation(f"producer: {error}")


class HTTPRetrier:
    """An idempotent producer over HTTP (Producer-Id "crash-http", epoch 0), one event per
    POST: a POST that got no answer before a kill is sent again, same Producer-Seq, after
    the restart. Answered (200, or 204 for a duplicate), its event must be stored once."""

    def __init__(self):
        self.next = 0
        self.acked = 0
        self.retries = 0
        self.unanswered = False

    def run(self, port, ledger, stop):
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            while not stop.is_set():
                if self.unanswered:
                    self.retries += 1
                self.unanswered = True
                headers = {"Content-Type": "text/plain", "Producer-Id": "crash-http", "Producer-Epoch": "0", "Producer-Seq": str(self.next)}
                conn.request("POST", f"/v1/stream/{HTTP_STREAM}", body=f"h-{self.next}".encode(), headers=headers)
                response = conn.getresponse()
                response.read()
                if response.status not in (200, 204):
                    ledger.violation(f"http producer: Producer-Seq {self.next} answered {response.status}")
                    return
                self.unanswered = False
                self.acked = self.next + 1
                self.next += 1
        except (OSError, http.client.HTTPException):
            pass  # the daemon was killed: the POST is sent again next round


class Follower:
    """A live subscriber that resumes from its last sequence + 1 after each restart."""

    def __init__(self, stream):
        self.stream = stream
        self.last = 0
        self.seen = 0

    def run(self, socket_path, ledger, stop):
        try:
            with ReplayConnection(socket_path) as conn:
                for event in conn.subscribe(self.stream, f"from={self.last + 1}"):
                    if event.seq != self.last + 1:
                        ledger.violation(f"{self.stream} follower: expected {self.last + 1}, got {event.seq}")
                    self.last = event.seq
                    self.seen += 1
                    if stop.is_set():
                        return
        except ConnectionError as error:
            ledger.cut(error)
        except OSError:
            pass


GROUP_STREAM = "orders"


def group_worker(socket_path, ledger, name, stop):
    """A member of the group "crashers" on orders: acknowledges each event it is handed.
    ack_wait is 1 s so that what a killed daemon's members held comes back quickly."""
    def refused(error):
        with ledger.lock:
            ledger.group_refused += 1  # its time ran out under load and another has it

    try:
        with ReplayConnection(socket_path) as conn:
            for job in conn.group(GROUP_STREAM, "crashers", member=name, ack_wait=1, max_pending=16):
                ledger.group_handed(job.seq, name)
                ledger.group_sent(job.seq)
                job.ack(then=lambda seq=job.seq: ledger.group_confirmed(seq), refused=refused)
                if stop.is_set():
                    return
    except ConnectionError as error:
        ledger.cut(error)
    except OSError:
        pass


def drain_group(socket_path, ledger):
    """The last round: workers run, with no kill, until the group has nothing pending and
    nothing left to hand out."""
    stop = threading.Event()
    workers = [threading.Thread(target=group_worker, args=(socket_path, ledger, f"gw{i}", stop), daemon=True) for i in range(2)]
    for worker in workers:
        worker.start()
    deadline = time.time() + 60
    with ReplayConnection(socket_path) as conn:
        while time.time() < deadline:
            groups = [g for g in conn.groups(GROUP_STREAM) if g["name"] == "crashers"]
            if groups and groups[0]["pending"] == 0 and groups[0]["lag"] == 0:
                break
            time.sleep(0.1)
        else:
            ledger.violation("group: the workers did not finish the work within a minute of the last restart")
        last = conn.groups(GROUP_STREAM)[0]["delivered_seq"]
    stop.set()
    missing = [seq for seq in range(1, last + 1) if seq not in ledger.group_acks_sent]
    if missing:
        ledger.violation(f"group: {len(missing)} events of {GROUP_STREAM} were never acknowledged (first {missing[:5]})")
    return last


def wait_for_ticks(directory, ledger):
    """The eager source runs again after every restart: by the end it has stored something.
    (Checked once, at the end, with a minute to do it: a round can be a tenth of a second,
    shorter than a loaded machine takes to start the source's shell.)"""
    deadline = time.time() + 60
    while time.time() < deadline:
        db = sqlite3.connect(f"file:{os.path.join(directory, 'replay.sqlite')}?mode=ro", uri=True)
        ticks = db.execute("SELECT count(*) FROM events WHERE stream = 'ticks'").fetchone()[0]
        db.close()
        if ticks > 0:
            return
        time.sleep(0.1)
    ledger.violation("the eager source stored nothing within a minute of the last restart")


def catch_up(socket_path, ledger, stop):
    """Reads a stream from the start while it is written to: contiguous from 1."""
    expected = 1
    try:
        with ReplayConnection(socket_path) as conn:
            for event in conn.subscribe("orders", "all"):
                if event.seq != expected:
                    ledger.violation(f"catch-up reader: expected {expected}, got {event.seq}")
                expected = event.seq + 1
                if stop.is_set():
                    return
    except ConnectionError as error:
        ledger.cut(error)
    except OSError:
        pass


def start_daemon(replayd, directory):
    """The daemon, its socket, and its HTTP port (from its log: it picks one)."""
    sock = os.path.join(directory, "replayd.sock")
    log_path = os.path.join(directory, "replayd.log")
    log = open(log_path, "ab")
    start = log.tell()
    proc = subprocess.Popen(
        [replayd, "--socket", sock, "--db", os.path.join(directory, "replay.sqlite"), "--default-capacity", "unlimited",
         "--http", "127.0.0.1:0"],
        stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.time() + 60
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"replayd exited with {proc.returncode} at start; see {log.name}")
        with open(log_path, "rb") as text:
            text.seek(start)
            lines = [line for line in text.read().decode(errors="replace").splitlines() if "http listening on" in line]
        try:
            if lines:
                with ReplayConnection(sock) as conn:
                    conn.ping()
                    return proc, sock, int(lines[-1].rsplit(":", 1)[1])
        except OSError:
            pass
        time.sleep(0.02)
    raise SystemExit("replayd did not start within a minute")


def verify(directory, ledger, http_acked):
    db = sqlite3.connect(f"file:{os.path.join(directory, 'replay.sqlite')}?mode=ro", uri=True)
    lost = 0
    for stream in STREAMS + ["ticks"]:
        rows = dict(db.execute("SELECT seq, payload FROM events WHERE stream = ? ORDER BY seq", (stream,)).fetchall())
        seqs = sorted(rows)
        if seqs != list(range(1, len(seqs) + 1)):
            ledger.violation(f"{stream}: sequence numbers are not contiguous from 1")
        for seq, payload in ledger.acked.get(stream, {}).items():
            if rows.get(seq) != payload:
                lost += 1
    produced = [row[0] for row in db.execute("SELECT payload FROM events WHERE stream = 'payments' ORDER BY seq")]
    if produced != [f"r-{pseq}".encode() for pseq in range(len(produced))]:
        duplicates = len(produced) - len(set(produced))
        ledger.violation(f"payments: the producer's events are not each stored once in order ({duplicates} duplicated)")
    posted = [row[0] for row in db.execute("SELECT payload FROM events WHERE stream = ? ORDER BY seq", (HTTP_STREAM,))]
    if posted != [f"h-{pseq}".encode() for pseq in range(len(posted))]:
        duplicates = len(posted) - len(set(posted))
        ledger.violation(f"{HTTP_STREAM}: the HTTP producer's events are not each stored once in order ({duplicates} duplicated)")
    if len(posted) < http_acked:
        lost += http_acked - len(posted)
        ledger.violation(f"{HTTP_STREAM}: {http_acked - len(posted)} answered POSTs are not stored")
    # Every stream's hash chain, recomputed here from the file (tools/verify_checkpoint.py's
    # walk), must hold, and end at the head its row keeps.
    for name, last_seq, head in db.execute("SELECT name, last_seq, chain_head FROM streams").fetchall():
        try:
            last, computed = recompute(db, name)
        except ValueError as error:
            ledger.violation(f"hash chain: {error}")
            continue
        if last == last_seq and head is not None and computed != head:
            ledger.violation(f"hash chain: {name} ends at {computed.hex()}, its row says {head.hex()}")
        ledger.chained += 1
    check = db.execute("PRAGMA integrity_check").fetchone()[0]
    if check != "ok":
        ledger.violation(f"integrity_check: {check}")
    db.close()
    return lost


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    default = next((p for p in (f"{root}/.build/release/replayd", f"{root}/.build/debug/replayd") if os.path.exists(p)), "replayd")
    parser.add_argument("--replayd", default=default)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=2.0, help="longest run before a kill")
    parser.add_argument("--publishers", type=int, default=4)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args(argv)
    random.seed(args.seed)

    ledger = Ledger()
    followers = [Follower(s) for s in STREAMS]
    retrier = Retrier()
    http_retrier = HTTPRetrier()
    lost_total = 0
    with tempfile.TemporaryDirectory(prefix="replay-crash-") as directory:
        for round_number in range(1, args.kills + 1):
            proc, sock, port = start_daemon(args.replayd, directory)
            if round_number == 1:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                conn.request("PUT", f"/v1/stream/{HTTP_STREAM}", headers={"Content-Type": "text/plain"})
                if conn.getresponse().status not in (200, 201):
                    raise SystemExit(f"could not create {HTTP_STREAM} over HTTP")
                source = b'i=$REPLAY_LAST_SEQ; while true; do i=$((i+1)); echo "tick $i"; sleep 0.005; done'
                with ReplayConnection(sock) as conn:
                    conn.sock.sendall(b"CREATE ticks capacity=unlimited connect=eager source=%d\r\n%s\r\n" % (len(source), source))
                    verb, words, _ = conn._frame()
                    if verb != "+OK":
                        raise SystemExit(f"could not create the source stream: {words}")
            stop = threading.Event()
            threads = [threading.Thread(target=publisher, args=(sock, ledger, i, stop)) for i in range(args.publishers)]
            threads.append(threading.Thread(target=retrier.run, args=(sock, ledger, stop)))
            threads.append(threading.Thread(target=http_retrier.run, args=(port, ledger, stop)))
            threads += [threading.Thread(target=f.run, args=(sock, ledger, stop)) for f in followers]
            threads.append(threading.Thread(target=catch_up, args=(sock, ledger, stop)))
            threads += [threading.Thread(target=group_worker, args=(sock, ledger, f"gw{i}", stop)) for i in range(2)]
            ledger.new_round()
            for thread in threads:
                thread.daemon = True
                thread.start()
            time.sleep(random.uniform(0.1, args.seconds))
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            stop.set()
            for thread in threads:
                thread.join(timeout=10)
            lost = verify(directory, ledger, http_retrier.acked)
            lost_total += lost
            acked = sum(len(v) for v in ledger.acked.values())
            print(f"kill {round_number}: {acked} events acknowledged so far, {lost} lost, "
                  f"followers at {[f.last for f in followers]}", flush=True)

        # The last round, with no kill: the group's workers finish what is left.
        ledger.new_round()
        proc, sock, _ = start_daemon(args.replayd, directory)
        group_last = drain_group(sock, ledger)
        wait_for_ticks(directory, ledger)
        proc.send_signal(signal.SIGTERM)
        proc.wait()

    acked = sum(len(v) for v in ledger.acked.values())
    print(f"events acknowledged: {acked}")
    print(f"kills survived: {args.kills}")
    print(f"hash chains verified after the kills: {ledger.chained}")
    print(f"events lost: {lost_total}")
    print(f"connections cut mid-frame: {ledger.cut_mid_frame}")
    print(f"producer events acknowledged: {len(retrier.acked)}, batches resent after a kill: {retrier.retries}")
    print(f"HTTP producer events answered: {http_retrier.acked}, POSTs resent after a kill: {http_retrier.retries}")
    print(f"group: {group_last} events of {GROUP_STREAM} handed out, {len(ledger.group_acks_confirmed)} ACKs confirmed, "
          f"{ledger.group_refused} ACKs refused as late")
    for text in ledger.violations[:20]:
        print(f"violation: {text}")
    return 0 if lost_total == 0 and not ledger.violations else 1


if __name__ == "__main__":
    sys.exit(main())
