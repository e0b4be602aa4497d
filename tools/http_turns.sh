#!/bin/bash
# HTTP appends from replayd builds taking turns, each on a fresh daemon and database, for
# the A/B figures in docs/PERFORMANCE.md: POSTs/s, p50 and p99 from `wrk` (16 connections,
# one 100-byte POST in flight each, tools/http_post.lua) and the daemon's CPU per POST
# (from /proc/<pid>/stat). With METRICS=1 it also prints each run's commits and POSTs per
# commit from /metrics, and each thread's CPU. With POSTGRES=<URL> each daemon stores in a
# new database on that PostgreSQL server (tools/http_daemon.sh).
# At the end, each build's medians and ranges, and each build's CPU per POST against the
# first's, round by round (the A/B figure, which the machine's drift spreads less).
#   tools/http_turns.sh ROUNDS REPLAYD [REPLAYD...]
# Needs wrk, curl and python3. The daemons listen on 127.0.0.1:18181, one at a time.
set -u
rounds=$1; shift
tools=$(cd "$(dirname "$0")" && pwd)
. "$tools/http_daemon.sh"
results=
for round in $(seq "$rounds"); do
  for bin in "$@"; do
    start_daemon "$bin"
    before=$(cpu $pid)
    out=$(post_bench)
    after=$(cpu $pid)
    rps=$(echo "$out" | awk '/Requests\/sec/{print $2}')
    p50=$(echo "$out" | awk '$1=="50%"{print $2}'); p99=$(echo "$out" | awk '$1=="99%"{print $2}')
    requests=$(echo "$out" | awk '/requests in/{print $1}')
    line="round $round $bin POSTs/s=$rps p50=$p50 p99=$p99 cpu_per_post_us=$(python3 -c "print(round(($after-$before)*10000/$requests,1))")"
    echo "$line"
    results+="$line"$'\n'
    if [ "${METRICS:-0}" = 1 ]; then
      curl -s "$url/metrics" | grep -E '^replay_commits_total|^replay_commit_batch_requests_(sum|count)'
      for task in /proc/$pid/task/*; do
        echo "  thread $(cat "$task/comm") cpu_ticks=$(awk '{print $14+$15}' "$task/stat") $(grep -h '^voluntary_ctxt' "$task/status")"
      done
    fi
    stop_daemon
  done
done
RESULTS=$results python3 - "$@" <<'SUMMARY'
import os, re, statistics, sys
lines = os.environ["RESULTS"].splitlines()
builds = sys.argv[1:]
def figures(bin, name):
    return [float(re.search(name + r"=([0-9.]+)", l).group(1)) for l in lines if l.split()[2] == bin]
def shown(values):
    return f"{statistics.median(values):,.1f} ({min(values):,.1f}-{max(values):,.1f})"
first = figures(builds[0], "cpu_per_post_us")
for bin in builds:
    cpu, rate = figures(bin, "cpu_per_post_us"), figures(bin, "POSTs/s")
    print(f"summary {bin}: cpu_per_post_us {shown(cpu)}, POSTs/s {shown(rate)}")
    if bin != builds[0]:
        ratios = [after / before for before, after in zip(first, cpu)]
        print(f"  cpu against {builds[0]}, by round: {' '.join(f'{r:.3f}' for r in ratios)}; "
              f"median {statistics.median(ratios):.3f}, lower in {sum(r < 1 for r in ratios)} of {len(ratios)}")
SUMMARY
