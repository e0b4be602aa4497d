#!/usr/bin/env bash
# Per-event expiry under load, on a fresh daemon in a temp folder (release build):
#   tools/ttl_bench.sh [RATE [SECONDS [TTL]]]     (defaults 100000, 20, 2)
# Publishes RATE events a second for SECONDS seconds (one `replayctl send`, fed at that
# pace) to a stream whose events live TTL seconds: from TTL seconds on, RATE events a second
# expire while RATE a second are published. Then the same to a stream without expiry, on a
# fresh daemon. For each run: the commits, how many took over 10 ms and over 25 ms (the
# writer's `replay_commit_duration_seconds` on /metrics), the events expired, the events
# the stream still holds, and the publisher's achieved rate.
set -euo pipefail
rate=${1:-100000}
seconds=${2:-20}
ttl=${3:-2}
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/.build/release"
dir=$(mktemp -d)
daemon=
trap 'kill "$daemon" 2>/dev/null || true; wait "$daemon" 2>/dev/null || true; rm -rf "$dir"' EXIT
port=$((20000 + RANDOM % 20000))

metric() { curl -s "http://127.0.0.1:$port/metrics" | awk -v name="$1" '$1 == name {print $2}'; }

run() { # $1: label, $2: CREATE options
  rm -f "$dir/replay.sqlite"* "$dir/s"
  "$bin/replayd" --socket "$dir/s" --db "$dir/replay.sqlite" --http "127.0.0.1:$port" >"$dir/log" 2>&1 &
  daemon=$!
  for _ in $(seq 100); do [ -S "$dir/s" ] && "$bin/replayctl" --socket "$dir/s" list >/dev/null 2>&1 && break; sleep 0.1; done
  "$bin/replayctl" --socket "$dir/s" create t --capacity unlimited $2
  local commits_before over10_before over25_before
  commits_before=$(metric 'replay_commit_duration_seconds_count')
  over10_before=$(metric 'replay_commit_duration_seconds_bucket{le="0.01"}')
  over25_before=$(metric 'replay_commit_duration_seconds_bucket{le="0.025"}')
  local started ended
  started=$(date +%s.%N)
  python3 - "$rate" "$seconds" <<'PY' | "$bin/replayctl" --socket "$dir/s" send t -q
import sys, time
rate, seconds = int(sys.argv[1]), int(sys.argv[2])
tick = 0.01
per_tick = rate * tick
start = time.monotonic()
sent = 0
out = sys.stdout.buffer
while sent < rate * seconds:
    due = int((time.monotonic() - start) / tick * per_tick) + int(per_tick)
    lines = min(due, rate * seconds) - sent
    if lines > 0:
        out.write(b"".join(b"%d\n" % n for n in range(sent, sent + lines)))
        out.flush()
        sent += lines
    time.sleep(tick)
PY
  ended=$(date +%s.%N)
  sleep $((ttl + 2))
  local commits over10 over25
  commits=$(($(metric 'replay_commit_duration_seconds_count') - commits_before))
  over10=$((commits - ($(metric 'replay_commit_duration_seconds_bucket{le="0.01"}') - over10_before)))
  over25=$((commits - ($(metric 'replay_commit_duration_seconds_bucket{le="0.025"}') - over25_before)))
  printf '%-12s publish %.0f events/s; %d commits, %d over 10 ms, %d over 25 ms; %s expired; %s held\n' "$1" \
    "$(echo "$rate * $seconds / ($ended - $started)" | bc -l)" "$commits" "$over10" "$over25" \
    "$(metric replay_events_expired_total)" "$("$bin/replayctl" --socket "$dir/s" info t --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["count"])')"
  kill "$daemon"
  wait "$daemon" 2>/dev/null || true
}

run "ttl ${ttl}s" "--event-ttl ${ttl}s"
run "no ttl" ""
