#!/bin/bash
# Idempotent producers' HTTP appends against plain ones, for the figure in
# docs/PERFORMANCE.md: each round, each replayd build takes a fresh daemon and database for
# the plain run and another for the producers' run (`wrk -t16 -c16 -d6s -s
# tools/http_post_producer.lua`, with PLAIN=1 for plain: the same Lua, so that the two runs
# differ only by the headers). Prints POSTs/s of both, their ratio, and the daemon's CPU
# per POST in each (from /proc/<pid>/stat), which spreads less than the rates. With
# THREADS=1, also each busy thread's CPU per POST (the writer runs on the dispatch threads);
# with IO=1, the bytes the daemon wrote (its WAL, and the answers on the sockets) per commit
# and per POST, from /proc/<pid>/io and the commits in /metrics.
#   tools/http_producer_turns.sh ROUNDS REPLAYD [REPLAYD...]
# Needs wrk and curl. The daemons listen on 127.0.0.1:18181, one at a time.
set -u
rounds=$1; shift
tools=$(cd "$(dirname "$0")" && pwd)
. "$tools/http_daemon.sh"
run() {  # run PLAIN(0|1) REPLAYD: "POSTs/s µs-of-CPU-a-POST"
  start_daemon "$2"
  local before out after
  before=$(cpu $pid)
  local written=$(awk '/^wchar/{print $2}' "/proc/$pid/io")
  out=$(PLAIN=$1 wrk -t16 -c16 -d6s -s "$tools/http_post_producer.lua" "$url/v1/stream/bench")
  after=$(cpu $pid)
  if [ "${IO:-0}" = 1 ]; then
    local posts commits
    written=$(( $(awk '/^wchar/{print $2}' "/proc/$pid/io") - written ))
    posts=$(echo "$out" | awk '/requests in/{print $1}')
    commits=$(curl -s "$url/metrics" | awk '/^replay_commits_total/{print $2}')
    echo "  io, PLAIN=$1: $posts POSTs in $commits commits, $((written / commits)) bytes written a commit, $((written / posts)) a POST" >&2
  fi
  if [ "${THREADS:-0}" = 1 ]; then
    local n task ticks line="  threads, PLAIN=$1, µs a POST:"
    n=$(echo "$out" | awk '/requests in/{print $1}')
    for task in /proc/$pid/task/*; do
      ticks=$(awk '{print $14+$15}' "$task/stat")
      [ "$ticks" -gt 5 ] && line="$line $(tr ' ' '_' < "$task/comm")=$(python3 -c "print(round($ticks*10000/$n,1))")"
    done
    echo "$line" >&2
  fi
  stop_daemon
  echo "$out" | awk -v ticks=$((after - before)) '/requests in/{n=$1} /Requests\/sec/{printf "%s %.1f\n", $2, ticks*10000/n}'
}
for round in $(seq "$rounds"); do
  for bin in "$@"; do
    read -r plain plain_cpu <<< "$(run 1 "$bin")"
    read -r producers producers_cpu <<< "$(run 0 "$bin")"
    echo "round $round $bin plain=$plain producers=$producers ratio=$(python3 -c "print(round($producers/$plain,3))") cpu_us_per_post plain=$plain_cpu producers=$producers_cpu"
  done
done
