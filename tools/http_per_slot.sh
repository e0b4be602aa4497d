#!/bin/bash
# HTTP appends per connection against the socket's pipelined publishing per slot, in one
# run (issue 30's per-connection figure, docs/PERFORMANCE.md): each round runs
# `replay-bench --scenarios publish-pipelined` (× 1 is one connection with 100 in flight)
# on a fresh daemon, then `wrk` with 16 connections of one POST each on another. Divide
# × 1 by 100 and the POSTs/s by 16.
#   tools/http_per_slot.sh ROUNDS REPLAYD
# Needs wrk, curl and a release build of Benchmarks/ (replay-bench).
set -u
rounds=$1; bin=$2
tools=$(cd "$(dirname "$0")" && pwd)
bench=${REPLAY_BENCH:-$tools/../Benchmarks/.build/release/replay-bench}
port=18181; url=http://127.0.0.1:$port
# The daemon under test goes with the script, however it ends (a closed pipe, ^C).
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null' EXIT
trap 'exit 1' INT TERM PIPE
waitport() { for _ in $(seq 100); do curl -s -o /dev/null "$url/" && return; sleep 0.1; done; }
for round in $(seq "$rounds"); do
  "$bench" --against replay --replayd "$bin" --scenarios publish-pipelined --scale 0.3 --rounds 1 --sqlite-ceiling none 2>&1 \
    | grep '^{' | sed "s/^/round $round socket /"
  dir=$(mktemp -d)
  "$bin" --socket "$dir/s" --db "$dir/db.sqlite" --http 127.0.0.1:$port --sync full > "$dir/log" 2>&1 &
  pid=$!
  waitport
  # Another process on the port would answer for it: measure only this daemon.
  kill -0 $pid 2>/dev/null || { echo "replayd did not start:"; cat "$dir/log"; exit 1; }
  curl -s -X PUT -H 'Content-Type: application/octet-stream' "$url/v1/stream/bench" -o /dev/null
  out=$(wrk -t2 -c16 -d8s --latency -s "$tools/http_post.lua" "$url/v1/stream/bench")
  echo "round $round http POSTs/s=$(echo "$out" | awk '/Requests\/sec/{print $2}') p99=$(echo "$out" | awk '$1=="99%"{print $2}')"
  kill $pid; wait $pid 2>/dev/null; rm -rf "$dir"
done
