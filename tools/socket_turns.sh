#!/bin/bash
# Pipelined socket publishing from replayd builds and the C server in replay's shape, taking
# turns, each on a fresh daemon and database, for the CPU-per-event figures in
# docs/PERFORMANCE.md: eight publishers (tools/keyed_publisher.c, 100 in flight each,
# 100-byte events) to two streams, as the bench's publish-pipelined ×8, and the server's
# CPU per event from /proc/<pid>/stat around them. `C` in place of a build runs
# tools/workqueue_ceiling.c --writer thread (an event loop and a writer thread, as replay).
#   tools/socket_turns.sh ROUNDS REPLAYD|C [REPLAYD|C ...]
# With EVENTS=<n> each publisher sends n events (default 150,000); with PERF=<file>, the
# last run is also recorded there (`perf record -e cpu-clock --call-graph dwarf`, 4 s).
# The daemons run unlimited streams (--default-capacity unlimited), as the bench's do.
set -u
rounds=$1; shift
tools=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$tools/.." && pwd)
work=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$work"' EXIT
trap 'exit 1' INT TERM PIPE
cc -O2 -o "$work/keyed_publisher" "$tools/keyed_publisher.c"
cc -O2 -pthread -o "$work/workqueue_ceiling" "$tools/workqueue_ceiling.c" -lsqlite3
events=${EVENTS:-150000}

run() {  # run REPLAYD|C: prints "µs-of-CPU-an-event events/s"
  local dir="$work/run" bin=$1
  rm -rf "$dir" && mkdir "$dir"
  if [ "$bin" = C ]; then
    "$work/workqueue_ceiling" --writer thread --migrations "$root/migrations" --socket "$dir/s" --db "$dir/db.sqlite" --sync full > "$dir/log" 2>&1 &
  else
    "$bin" --socket "$dir/s" --db "$dir/db.sqlite" --sync full --default-capacity unlimited > "$dir/log" 2>&1 &
  fi
  pid=$!
  for _ in $(seq 200); do [ -S "$dir/s" ] && break; sleep 0.05; done
  kill -0 $pid 2>/dev/null || { echo "$bin did not start:"; cat "$dir/log"; exit 1; }
  # Warm up (the streams made, SQLite's pages and the WAL in use) before the measure.
  "$work/keyed_publisher" "$dir/s" pipe0 20000 0 --window 100 --size 100 > /dev/null
  "$work/keyed_publisher" "$dir/s" pipe1 20000 0 --window 100 --size 100 > /dev/null
  local before start publishers="" recorder=""
  before=$(awk '{print $14+$15}' "/proc/$pid/stat")
  start=$(date +%s.%N)
  if [ -n "${PERF:-}" ]; then
    perf record -e cpu-clock -F 1999 --call-graph dwarf,16384 -p $pid -o "$PERF" -- sleep 4 > /dev/null 2>&1 &
    recorder=$!
  fi
  for i in 0 1 2 3 4 5 6 7; do
    "$work/keyed_publisher" "$dir/s" pipe$((i % 2)) "$events" 0 --window 100 --size 100 > /dev/null &
    publishers="$publishers $!"
  done
  wait $publishers
  local after end
  after=$(awk '{print $14+$15}' "/proc/$pid/stat")
  end=$(date +%s.%N)
  [ -n "$recorder" ] && wait $recorder
  kill $pid; wait $pid 2>/dev/null; pid=
  python3 -c "n = $events * 8; print(f'{($after - $before) * 10000 / n:.2f} {n / ($end - $start):.0f}')"
}

for round in $(seq "$rounds"); do
  for bin in "$@"; do
    result=$(run "$bin") || { echo "$result"; exit 1; }
    read -r cpu rate <<< "$result"
    echo "round $round $bin cpu_per_event_us=$cpu events/s=$rate"
  done
done
