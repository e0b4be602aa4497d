#!/bin/bash
# HTTP appends per connection against the socket's pipelined publishing per slot, in one
# run (the per-connection figure of docs/PERFORMANCE.md): each round runs
# `replay-bench --scenarios publish-pipelined` (× 1 is one connection with 100 in flight)
# on a fresh daemon, then `wrk` with 16 connections of one POST each on another. Divide
# × 1 by 100 and the POSTs/s by 16.
#   tools/http_per_slot.sh ROUNDS REPLAYD
# Needs wrk, curl and a release build of Benchmarks/ (replay-bench).
set -u
rounds=$1; bin=$2
tools=$(cd "$(dirname "$0")" && pwd)
. "$tools/http_daemon.sh"
bench=${REPLAY_BENCH:-$tools/../Benchmarks/.build/release/replay-bench}
for round in $(seq "$rounds"); do
  "$bench" --against replay --replayd "$bin" --scenarios publish-pipelined --scale 0.3 --rounds 1 --sqlite-ceiling none 2>&1 \
    | grep '^{' | sed "s/^/round $round socket /"
  start_daemon "$bin"
  out=$(post_bench)
  echo "round $round http POSTs/s=$(echo "$out" | awk '/Requests\/sec/{print $2}') p99=$(echo "$out" | awk '$1=="99%"{print $2}')"
  stop_daemon
done
