#!/usr/bin/env bash
# Heap allocations per event on each hot path of a real replayd, counted by
# tools/malloc_count.c preloaded into it: the daemon's whole process (its event loops, its
# writer, its read threads), so each figure is everything the daemon allocates for one
# event on that path, amortized over the run. Drivers are separate processes (replayctl,
# wrk, curl, the Python client), so nothing of theirs is counted.
#
#   swift build -c release --product replayd && swift build -c release --product replayctl
#   tools/allocations.sh [--check BUDGETS] [EVENTS]   (default 200000; wrk's POSTs run for 5 s)
#
# With --check, each path's figure is held to its budget in BUDGETS (tools/allocation-
# budgets.tsv: a path's name as printed, a tab, the most allocations per event it may
# take); the script fails naming every path over its budget. CI runs it so, as swift-nio's
# allocation-counter tests fail a change that makes a hot path allocate more.
#
# Paths: a PUB pipelined by one publisher and by 8; a PUB one at a time, 100 bytes
# (tools/keyed_publisher.c, --window 1: a commit each); an event delivered to each of 10 live
# socket subscribers (less the publish); an HTTP POST (wrk, 16 connections, 100 bytes);
# an SSE event to each of 20 readers (less the publish); a group's hand-out and ACK
# (the Python client's worker, one ACK per event).
set -euo pipefail
cd "$(dirname "$0")/.."
budgets=
if [ "${1:-}" = --check ]; then
  budgets=${2:?usage: allocations.sh [--check BUDGETS] [EVENTS]}
  shift 2
fi
events=${1:-200000}
bin=.build/release
dir=$(mktemp -d)
trap '[ -n "${pid:-}" ] && kill -TERM "$pid" 2>/dev/null; rm -rf "$dir"' EXIT
cc -O2 -shared -fPIC -o "$dir/malloc_count.so" tools/malloc_count.c
cc -O2 -o "$dir/keyed_publisher" tools/keyed_publisher.c

port=$((20000 + RANDOM % 20000))
MALLOC_COUNT="$dir/count" LD_PRELOAD="$dir/malloc_count.so" \
  "$bin/replayd" --socket "$dir/s" --db "$dir/db.sqlite" --http "127.0.0.1:$port" --default-capacity unlimited 2>"$dir/log" &
pid=$!
for _ in $(seq 1 200); do [ -S "$dir/s" ] && break; sleep 0.05; done
ctl() { "$bin/replayctl" --socket "$dir/s" "$@"; }

total() {
  kill -USR2 "$pid"
  sleep 0.3
  cat "$dir/count"
}
numbers() { seq 1 "$1" | sed 's/^/event /'; }
printf '%-44s %10s %12s %10s\n' path events allocations "per event"
over=()
row() {
  local per
  per=$(echo "$3 / $2" | bc -l)
  printf '%-44s %10d %12d %10.2f\n' "$1" "$2" "$3" "$per"
  [ -n "$budgets" ] || return 0
  local budget
  budget=$(awk -F '\t' -v path="$1" '$1 == path { print $2 }' "$budgets")
  if [ -z "$budget" ]; then
    over+=("$1: no budget in $budgets")
  elif [ "$(echo "$per > $budget" | bc -l)" = 1 ]; then
    over+=("$(printf '%s: %.2f allocations per event, over its budget of %s' "$1" "$per" "$budget")")
  fi
}

# Warm up: the first streams, statements and buffers are not the steady state.
numbers 20000 | ctl send warm -q

before=$(total); numbers "$events" | ctl send one -q; after=$(total)
publish=$(( after - before ))
row "PUB, one pipelined publisher" "$events" "$publish"

before=$(total)
drivers=()
for i in 1 2 3 4 5 6 7 8; do
  numbers $((events / 8)) | ctl send "eight-$i" -q &
  drivers+=($!)
done
wait "${drivers[@]}"
after=$(total)
row "PUB, 8 pipelined publishers" "$events" $(( after - before ))

# One at a time, each PUB waiting for its +OK: every PUB is a commit of its own, and pays
# all of a commit's own allocations (the transaction, the stream's row, the hand-overs).
single=$(( events / 100 ))
"$dir/keyed_publisher" "$dir/s" single 200 0 --window 1 --size 100 >/dev/null
before=$(total); "$dir/keyed_publisher" "$dir/s" single "$single" 0 --window 1 --size 100 >/dev/null; after=$(total)
row "PUB, one at a time (a commit each)" "$single" $(( after - before ))

subscribers=10
drivers=()
for i in $(seq 1 $subscribers); do
  ctl subscribe live --count "$events" >/dev/null &
  drivers+=($!)
done
sleep 1
before=$(total); numbers "$events" | ctl send live -q; wait "${drivers[@]}"; after=$(total)
row "delivered event, per socket subscriber" $(( events * subscribers )) $(( after - before - publish ))

curl -sf -X PUT -H 'Content-Type: application/octet-stream' "http://127.0.0.1:$port/v1/stream/posts" >/dev/null
before=$(total)
requests=$(wrk -t2 -c16 -d5s -s tools/http_post.lua "http://127.0.0.1:$port/v1/stream/posts" | awk '/requests in/ {print $1}')
after=$(total)
row "HTTP POST (wrk, 16 connections)" "$requests" $(( after - before ))

readers=20
sse=$(( events / 10 ))
curl -sf -X PUT -H 'Content-Type: text/plain' "http://127.0.0.1:$port/v1/stream/sse" >/dev/null
readerPIDs=()
for i in $(seq 1 $readers); do
  curl -sN "http://127.0.0.1:$port/v1/stream/sse?offset=-1&live=sse" >/dev/null &
  readerPIDs+=($!)
done
sleep 1
before=$(total); numbers "$sse" | ctl send sse -q
# The readers are done when the daemon has delivered every event to each of them.
for _ in $(seq 1 600); do
  delivered=$(curl -s "http://127.0.0.1:$port/v1/streams?q=sse" | python3 -c '
import json, sys
listed = json.load(sys.stdin)
print(sum(s.get("delivered", 0) for s in (listed if isinstance(listed, list) else listed["streams"]) if s["name"] == "sse"))' || true)
  [ "${delivered:-0}" = "$(( sse * readers ))" ] && break
  sleep 0.1
done
after=$(total)
row "SSE event, per reader" $(( sse * readers )) $(( after - before - publish * sse / events ))
kill "${readerPIDs[@]}" 2>/dev/null || true

group=$(( events / 10 ))
# More events than the worker takes: it stops once it has taken its count (its last
# hand-outs, at most --max-pending of them, are counted with the rest, about 1 %).
numbers $(( group + 1000 )) | ctl send jobs -q
before=$(total)
python3 tools/replay_client.py --socket "$dir/s" work jobs --group workers --max-pending 256 --count "$group" >/dev/null
after=$(total)
row "group hand-out and ACK" "$group" $(( after - before ))

if ((${#over[@]})); then
  printf 'over budget (%s):\n' "$budgets" >&2
  printf '  %s\n' "${over[@]}" >&2
  exit 1
fi
[ -z "$budgets" ] || echo "every path within its budget ($budgets)"
