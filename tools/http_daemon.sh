# Sourced by tools/http_turns.sh, tools/http_per_slot.sh and tools/http_producer_turns.sh:
# one replayd at a time on a fresh database, serving HTTP on 127.0.0.1:18181 with a
# stream `bench` to POST to, and `wrk` against it. The daemon goes with the sourcing script
# however it ends (a closed pipe, ^C), and a daemon that did not start is an error, not
# another process's figures.
port=18181
url=http://127.0.0.1:$port
pid=
dir=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; [ -n "$dir" ] && rm -rf "$dir"' EXIT
trap 'exit 1' INT TERM PIPE

# start_daemon REPLAYD: sets `pid` and `dir`. With POSTGRES=<postgres:// URL of a
# database on a server> (`eval "$(tools/postgres-cluster.sh start)"; POSTGRES=$REPLAY_TEST_POSTGRES`),
# each daemon stores in a new database of that server, made with psql, instead of SQLite.
runs=0
start_daemon() {
  dir=$(mktemp -d)
  local db="$dir/db.sqlite"
  if [ -n "${POSTGRES:-}" ]; then
    runs=$((runs + 1))
    local name="turn_$$_$runs"
    psql "$POSTGRES" -qc "create database $name" > /dev/null || { echo "could not create database $name"; exit 1; }
    db="${POSTGRES%/*}/$name"
  fi
  "$1" --socket "$dir/s" --db "$db" --http 127.0.0.1:$port --sync full > "$dir/log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do curl -s -o /dev/null "$url/" && break; sleep 0.1; done
  # Another process on the port would answer for it: measure only this daemon.
  kill -0 $pid 2>/dev/null || { echo "replayd did not start:"; cat "$dir/log"; exit 1; }
  curl -s -X PUT -H 'Content-Type: application/octet-stream' "$url/v1/stream/bench" -o /dev/null
}

# cpu PID: the process's CPU so far, in clock ticks (user and system).
cpu() { awk '{print $14+$15}' "/proc/$1/stat"; }

stop_daemon() {
  kill $pid; wait $pid 2>/dev/null
  rm -rf "$dir"
  pid= dir=
}

# post_bench: 8 s of 16 connections, one 100-byte POST in flight each; prints wrk's report.
post_bench() {
  wrk -t2 -c16 -d8s --latency -s "$tools/http_post.lua" "$url/v1/stream/bench"
}
