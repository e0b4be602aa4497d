#!/bin/bash
# Idempotent producers' HTTP appends against plain ones, for the figure in
# docs/PERFORMANCE.md: each round, each replayd build takes a fresh daemon and database for
# the plain run and another for the producers' run (`wrk -t16 -c16 -d6s -s
# tools/http_post_producer.lua`, with PLAIN=1 for plain: the same Lua, so that the two runs
# differ only by the headers). Prints POSTs/s of both and their ratio.
#   tools/http_producer_turns.sh ROUNDS REPLAYD [REPLAYD...]
# Needs wrk and curl. The daemons listen on 127.0.0.1:18181, one at a time.
set -u
rounds=$1; shift
tools=$(cd "$(dirname "$0")" && pwd)
. "$tools/http_daemon.sh"
run() {  # run PLAIN(0|1) REPLAYD: POSTs/s
  start_daemon "$2"
  PLAIN=$1 wrk -t16 -c16 -d6s -s "$tools/http_post_producer.lua" "$url/v1/stream/bench" | awk '/Requests\/sec/{print $2}'
  stop_daemon
}
for round in $(seq "$rounds"); do
  for bin in "$@"; do
    plain=$(run 1 "$bin")
    producers=$(run 0 "$bin")
    echo "round $round $bin plain=$plain producers=$producers ratio=$(python3 -c "print(round($producers/$plain,3))")"
  done
done
