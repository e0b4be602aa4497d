#!/usr/bin/env bash
# Per-event expiry under load, on a fresh daemon in a temp folder (release build):
#   tools/ttl_bench.sh [RATE [SECONDS [TTL]]]     (defaults 100000, 20, 2)
# Publishes RATE events a second for SECONDS seconds (tools/keyed_publisher.c, one
# connection, paced in 1 ms steps whatever is unanswered: an open loop, so a stalled writer
# shows as latency) to a stream whose events live TTL seconds: from TTL seconds on, RATE
# events a second expire while RATE a second are published. Then the same to a stream
# without expiry, on a fresh daemon. For each run: the publish latency, the commits and how
# many took over 10 ms and over 25 ms (the writer's `replay_commit_duration_seconds` on
# /metrics), the WAL checkpoints and their time, the events expired, and the events the
# stream still holds. REPLAYD=<another replayd> runs that binary instead (a before/after).
set -euo pipefail
rate=${1:-100000}
seconds=${2:-20}
ttl=${3:-2}
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/.build/release"
replayd=${REPLAYD:-$bin/replayd}
dir=$(mktemp -d)
daemon=
trap 'kill "$daemon" 2>/dev/null || true; wait "$daemon" 2>/dev/null || true; rm -rf "$dir"' EXIT
port=$((20000 + RANDOM % 20000))
cc -O2 -o "$dir/publisher" "$root/tools/keyed_publisher.c"

metric() { curl -s "http://127.0.0.1:$port/metrics" | awk -v name="$1" '$1 == name {print $2}'; }

run() { # $1: label, $2: CREATE options
  rm -f "$dir/replay.sqlite"* "$dir/s"
  "$replayd" --socket "$dir/s" --db "$dir/replay.sqlite" --http "127.0.0.1:$port" >"$dir/log" 2>&1 &
  daemon=$!
  for _ in $(seq 100); do [ -S "$dir/s" ] && "$bin/replayctl" --socket "$dir/s" list >/dev/null 2>&1 && break; sleep 0.1; done
  "$bin/replayctl" --socket "$dir/s" create t --capacity unlimited $2
  local commits_before over10_before over25_before
  commits_before=$(metric 'replay_commit_duration_seconds_count')
  over10_before=$(metric 'replay_commit_duration_seconds_bucket{le="0.01"}')
  over25_before=$(metric 'replay_commit_duration_seconds_bucket{le="0.025"}')
  "$dir/publisher" "$dir/s" t $((rate * seconds)) 0 --rate "$rate" | sed "s/^/$1: /"
  sleep $((ttl + 2))
  local commits over10 over25
  commits=$(($(metric 'replay_commit_duration_seconds_count') - commits_before))
  over10=$((commits - ($(metric 'replay_commit_duration_seconds_bucket{le="0.01"}') - over10_before)))
  over25=$((commits - ($(metric 'replay_commit_duration_seconds_bucket{le="0.025"}') - over25_before)))
  local checkpoints
  checkpoints=$(metric replay_wal_checkpoint_duration_seconds_count)
  [ -n "$checkpoints" ] && [ "$checkpoints" != 0 ] &&
    checkpoints="$checkpoints WAL checkpoints, $(echo "scale=1; 1000 * $(metric replay_wal_checkpoint_duration_seconds_sum) / $checkpoints" | bc -l) ms each"
  printf '%s: %d commits, %d over 10 ms, %d over 25 ms; %s; %s expired; %s held\n' "$1" \
    "$commits" "$over10" "$over25" "${checkpoints:-no checkpoint figures}" "$(metric replay_events_expired_total)" "$("$bin/replayctl" --socket "$dir/s" info t --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["count"])')"
  kill "$daemon"
  wait "$daemon" 2>/dev/null || true
}

run "ttl ${ttl}s" "--event-ttl ${ttl}s"
run "no ttl" ""
