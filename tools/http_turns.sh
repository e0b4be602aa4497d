#!/bin/bash
# HTTP appends from replayd builds taking turns, each on a fresh daemon and database, for
# the A/B figures in docs/PERFORMANCE.md: POSTs/s, p50 and p99 from `wrk` (16 connections,
# one 100-byte POST in flight each, tools/http_post.lua) and the daemon's CPU per POST
# (from /proc/<pid>/stat). With METRICS=1 it also prints each run's commits and POSTs per
# commit from /metrics, and each thread's CPU.
#   tools/http_turns.sh ROUNDS REPLAYD [REPLAYD...]
# Needs wrk and curl. The daemons listen on 127.0.0.1:18181, one at a time.
set -u
rounds=$1; shift
tools=$(cd "$(dirname "$0")" && pwd)
port=18181; url=http://127.0.0.1:$port
cpu() { awk '{print $14+$15}' "/proc/$1/stat"; }
# The daemon under test goes with the script, however it ends (a closed pipe, ^C).
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null' EXIT
trap 'exit 1' INT TERM PIPE
waitport() { for _ in $(seq 100); do curl -s -o /dev/null "$url/" && return; sleep 0.1; done; }
for round in $(seq "$rounds"); do
  for bin in "$@"; do
    dir=$(mktemp -d)
    "$bin" --socket "$dir/s" --db "$dir/db.sqlite" --http 127.0.0.1:$port --sync full > "$dir/log" 2>&1 &
    pid=$!
    waitport
    # Another process on the port would answer for it: measure only this daemon.
    kill -0 $pid 2>/dev/null || { echo "replayd did not start:"; cat "$dir/log"; exit 1; }
    curl -s -X PUT -H 'Content-Type: application/octet-stream' "$url/v1/stream/bench" -o /dev/null
    before=$(cpu $pid)
    out=$(wrk -t2 -c16 -d8s --latency -s "$tools/http_post.lua" "$url/v1/stream/bench")
    after=$(cpu $pid)
    rps=$(echo "$out" | awk '/Requests\/sec/{print $2}')
    p50=$(echo "$out" | awk '$1=="50%"{print $2}'); p99=$(echo "$out" | awk '$1=="99%"{print $2}')
    requests=$(echo "$out" | awk '/requests in/{print $1}')
    echo "round $round $bin POSTs/s=$rps p50=$p50 p99=$p99 cpu_per_post_us=$(python3 -c "print(round(($after-$before)*10000/$requests,1))")"
    if [ "${METRICS:-0}" = 1 ]; then
      curl -s "$url/metrics" | grep -E '^replay_commits_total|^replay_commit_batch_requests_(sum|count)'
      for task in /proc/$pid/task/*; do
        echo "  thread $(cat "$task/comm") cpu_ticks=$(awk '{print $14+$15}' "$task/stat") $(grep -h '^voluntary_ctxt' "$task/status")"
      done
    fi
    kill $pid; wait $pid 2>/dev/null; rm -rf "$dir"
  done
done
