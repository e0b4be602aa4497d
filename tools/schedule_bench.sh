#!/usr/bin/env bash
# What scheduled events cost and how late they come, on a fresh daemon in a temp folder
# (release build):
#   tools/schedule_bench.sh [PENDING [RATE [SECONDS]]]     (defaults 1000000, 10000, 5)
# 1. PENDING events scheduled an hour ahead (`replayctl send --delay 1h`, pipelined): the
#    daemon's RSS before and after, and the time it took;
# 2. a restart: INFO still counts all of them;
# 3. RATE events a second falling due for SECONDS seconds (scheduled beforehand, each with
#    its own time), received by a live subscriber: how late each arrives after its due
#    time, by the subscriber's clock (the same host's), p50 / p99 / max.
set -euo pipefail
pending=${1:-1000000}
rate=${2:-10000}
seconds=${3:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/.build/release"
dir=$(mktemp -d)
daemon=
start_daemon() {
  "$bin/replayd" --socket "$dir/s" --db "$dir/replay.sqlite" --default-capacity unlimited >>"$dir/log" 2>&1 &
  daemon=$!
  for _ in $(seq 100); do [ -S "$dir/s" ] && "$bin/replayctl" --socket "$dir/s" list >/dev/null 2>&1 && break; sleep 0.1; done
}
trap 'kill "$daemon" 2>/dev/null; wait "$daemon" 2>/dev/null; rm -rf "$dir"' EXIT
rss() { awk '/VmRSS/ {print int($2 / 1024)}' "/proc/$daemon/status"; }
ctl() { "$bin/replayctl" --socket "$dir/s" "$@"; }
start_daemon
ctl create pending
before=$(rss)
seq 1 "$pending" >"$dir/lines"
/usr/bin/time -f "scheduled $pending events an hour ahead: %e s" "$bin/replayctl" --socket "$dir/s" send pending --delay 1h -q <"$dir/lines"
echo "daemon RSS: $before MB before, $(rss) MB with $pending pending"
kill "$daemon"; wait "$daemon" || true
start_daemon
echo "after a restart: $(ctl info pending --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["scheduled"])') pending, RSS $(rss) MB"
ctl create due
python3 - "$root/tools" "$dir/s" "$rate" "$seconds" <<'PY'
import sys, time, datetime, threading
sys.path.insert(0, sys.argv[1])
import replay_client
rate, seconds = int(sys.argv[3]), float(sys.argv[4])
count = int(rate * seconds)
start = time.time() + 10  # time to schedule them all first
def iso(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
with replay_client.ReplayConnection(sys.argv[2]) as conn:
    for chunk in range(0, count, 1000):
        out = bytearray()
        for i in range(chunk, min(count, chunk + 1000)):
            due = start + i / rate
            out += conn._pub("due", b"%.3f" % due, b"at=%s " % iso(due).encode())
        conn.sock.sendall(out)
        for _ in range(chunk, min(count, chunk + 1000)):
            verb, words, _ = conn._frame()
            conn._check(verb, words)
late = []
with replay_client.ReplayConnection(sys.argv[2]) as conn:
    for event in conn.subscribe("due", start="all", count=count):
        # The due time is rounded to the millisecond the daemon keeps.
        late.append(time.time() - round(float(event.payload), 3))
late.sort()
print(f"{count} events due at {rate}/s: late by p50 {late[len(late) // 2] * 1000:.1f} ms, "
      f"p99 {late[len(late) * 99 // 100] * 1000:.1f} ms, max {late[-1] * 1000:.1f} ms (the subscriber's clock)")
PY
