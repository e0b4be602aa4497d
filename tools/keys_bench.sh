#!/usr/bin/env bash
# What keys cost and what they give, on a fresh daemon in a temp folder (release build):
#   tools/keys_bench.sh [EVENTS [KEYS]]        (defaults 1000000, 1000)
# 1. publishing EVENTS lines pipelined from one `replayctl send`, without a key and with one;
# 2. a stream of EVENTS events over KEYS keys (EVENTS/KEYS each, key by key): the latency
#    of GET for each key from Python (tools/replay_client.py, one connection), and three
#    snapshot SUBs (`SUB … snapshot`) of it, each until its KEYS events are in.
set -euo pipefail
events=${1:-1000000}
keys=${2:-1000}
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/.build/release"
dir=$(mktemp -d)
trap 'kill "$daemon" 2>/dev/null; wait "$daemon" 2>/dev/null; rm -rf "$dir"' EXIT
"$bin/replayd" --socket "$dir/s" --db "$dir/replay.sqlite" --default-capacity unlimited >"$dir/log" 2>&1 &
daemon=$!
for _ in $(seq 50); do [ -S "$dir/s" ] && break; sleep 0.1; done
ctl() { "$bin/replayctl" --socket "$dir/s" "$@"; }
seq 1 "$events" >"$dir/lines"
for round in 1 2; do
  /usr/bin/time -f "publish $events, no key:  %e s" "$bin/replayctl" --socket "$dir/s" send "plain$round" -q <"$dir/lines"
  /usr/bin/time -f "publish $events, one key: %e s" "$bin/replayctl" --socket "$dir/s" send "keyed$round" --key k -q <"$dir/lines"
done
seq 1 $((events / keys)) >"$dir/per-key"
for key in $(seq 1 "$keys"); do ctl send big --key "k$key" -q <"$dir/per-key"; done
python3 - "$root/tools" "$dir/s" "$keys" "$events" <<'PY'
import sys, time
sys.path.insert(0, sys.argv[1])
import replay_client
keys, events = int(sys.argv[3]), int(sys.argv[4])
with replay_client.ReplayConnection(sys.argv[2]) as conn:
    times = []
    for key in range(1, keys + 1):
        start = time.perf_counter()
        conn.get("big", f"k{key}")
        times.append(time.perf_counter() - start)
    times.sort()
    print(f"GET of {keys} keys in {events} events: p50 {times[len(times) // 2] * 1e6:.0f} us, p99 {times[len(times) * 99 // 100] * 1e6:.0f} us")
for _ in range(3):
    with replay_client.ReplayConnection(sys.argv[2]) as conn:
        start = time.perf_counter()
        received = sum(1 for _ in conn.subscribe("big", start="snapshot", count=keys))
        print(f"snapshot of {received} keys in {events} events: {time.perf_counter() - start:.3f} s")
PY
