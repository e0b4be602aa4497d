#!/usr/bin/env bash
# A backup taken while PUBLISHERS write at full rate, against the same window with no
# backup and with `VACUUM INTO` (sqlite3) instead: each run's length, the publish rate
# during it, and the commit latency's p99 and maximum from replayd's own histogram
# (/metrics, bucket bounds). The database first holds FILL events of 100 bytes; each
# publisher's stream is capped at 1,000,000 events, so the file stays the same size from
# run to run.
#   tools/backup_under_load.sh [ROUNDS [PUBLISHERS [FILL]]]   (defaults 2, 8, 10000000;
#   needs a release build: swift build -c release)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-2}
publishers=${2:-8}
fill=${3:-10000000}
bin=.build/release
work=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
"$bin/replayd" --socket "$work/s.sock" --db "$work/db.sqlite" --http "127.0.0.1:$port" --default-capacity 1000000 2>"$work/log" &
daemon=$!
trap 'kill $daemon 2>/dev/null; wait $daemon 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 1 250); do [ -S "$work/s.sock" ] && break; sleep 0.02; done
lines() { python3 -c "
import sys
block = ('$1' * 99 + '\n') * 10000
try:
    for _ in range($2): sys.stdout.write(block)
except BrokenPipeError: pass"; }
"$bin/replayctl" create fill --capacity unlimited --socket "$work/s.sock" >/dev/null
lines y $((fill / 10000)) | "$bin/replayctl" send fill -q --socket "$work/s.sock"
snapshot() { curl -s "127.0.0.1:$port/metrics" | grep -E '^replay_commit_duration_seconds_bucket|^replay_events_published_total' >"$1"; }
measure() {
  local method=$1 load=()
  for i in $(seq 1 "$publishers"); do
    (lines x 1000000 | "$bin/replayctl" send "load$i" -q --socket "$work/s.sock" 2>/dev/null || true) &
    load+=($!)
  done
  sleep 3
  snapshot "$work/before"
  rm -f "$work/copy.sqlite"
  local start end
  start=$(date +%s.%N)
  case $method in
    none) sleep 4 ;;
    replayctl-backup) "$bin/replayctl" backup "$work/copy.sqlite" --socket "$work/s.sock" >/dev/null 2>&1 ;;
    vacuum-into) sqlite3 "$work/db.sqlite" "VACUUM INTO '$work/copy.sqlite'" ;;
  esac
  end=$(date +%s.%N)
  snapshot "$work/after"
  pkill -f "replayctl send load[0-9] -q --socket $work/s.sock" || true
  wait "${load[@]}" 2>/dev/null || true
  python3 - "$method" "$start" "$end" "$work" <<'PY'
import os, re, sys
method, start, end, work = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
def parse(name):
    values = {}
    for line in open(os.path.join(work, name)):
        m = re.match(r'(\S+?)(?:\{le="([^"]+)"\})? (\S+)', line)
        if m: values[(m.group(1), m.group(2))] = float(m.group(3))
    return values
before, after = parse("before"), parse("after")
seconds = end - start
events = after[("replay_events_published_total", None)] - before[("replay_events_published_total", None)]
buckets = sorted((float("inf") if le == "+Inf" else float(le), count - before.get((name, le), 0))
                 for (name, le), count in after.items() if name == "replay_commit_duration_seconds_bucket")
total = buckets[-1][1]
p99 = next(le for le, count in buckets if count >= 0.99 * total)
worst = next(le for le, count in buckets if count >= total)
size = os.path.getsize(os.path.join(work, "copy.sqlite")) if method != "none" else 0
print(f"{method:17} {seconds:6.2f} s  {events / seconds:9,.0f} events/s  commit p99 <= {p99 * 1000:g} ms, max <= {worst * 1000:g} ms"
      + (f"  copy {size / 1e6:,.0f} MB" if size else ""))
PY
}
# (bash reports each publisher stopped at the end of a run as "Terminated".)
for _ in $(seq 1 "$rounds"); do
  for method in none replayctl-backup vacuum-into; do measure $method 2>&1 | grep -v '^Terminated$'; done
done
