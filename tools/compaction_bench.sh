#!/usr/bin/env bash
# Key compaction under load, on a fresh daemon in a temp folder (release build):
#   tools/compaction_bench.sh [EVENTS [KEYS [RATE [SECONDS]]]]   (defaults 10000000, 1000, 50000, 30)
# 1. A compacted stream is filled with keyed events of 100 bytes over KEYS keys (each event's
#    key a hash of its number: every key's events scattered through the stream), flat out,
#    while a durable consumer that has read nothing holds compaction back.
# 2. Publishing goes on at RATE keyed events a second for SECONDS seconds, compaction still
#    held: the publish latency without compaction. The stream then holds EVENTS events.
# 3. The consumer is deleted, and publishing at RATE goes on while compaction works through
#    the stream, until compaction has caught up (the stream under 200,000 events): the
#    publish latency during compaction, the stream's count every 5 s, the writer's commits
#    over 10 and 25 ms (/metrics).
# 4. Publishing stops: the time until the stream holds about one event per key.
# The database's size (file, and pages in use) after 2 and after 4.
set -euo pipefail
events=${1:-10000000}
keys=${2:-1000}
rate=${3:-50000}
seconds=${4:-30}
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/.build/release"
dir=$(mktemp -d)
daemon=
trap 'kill "$daemon" 2>/dev/null || true; wait "$daemon" 2>/dev/null || true; rm -rf "$dir"' EXIT
port=$((20000 + RANDOM % 20000))
cc -O2 -o "$dir/publisher" "$root/tools/keyed_publisher.c"

ctl() { "$bin/replayctl" --socket "$dir/s" "$@"; }
metric() { curl -s "http://127.0.0.1:$port/metrics" | awk -v name="$1" '$1 == name {print $2}'; }
# LIST, not INFO: INFO counts the keys, a read of its own.
count() { ctl list --json | python3 -c 'import json,sys; print(next(s["count"] for s in json.load(sys.stdin) if s["name"] == "kv"))'; }
size() {
  local bytes pages free page
  bytes=$(du -cb "$dir"/replay.sqlite* | tail -1 | cut -f1)
  read -r pages free page < <(sqlite3 "$dir/replay.sqlite" 'SELECT (SELECT page_count FROM pragma_page_count), (SELECT freelist_count FROM pragma_freelist_count), (SELECT page_size FROM pragma_page_size)' | tr '|' ' ')
  printf '%s: database and WAL %d MB on disk, %d MB of pages in use, %d MB free for reuse\n' "$1" \
    $((bytes / 1000000)) $(((pages - free) * page / 1000000)) $((free * page / 1000000))
}
commits() { # the writer's commits so far: all, within 10 ms, within 25 ms (one scrape)
  curl -s "http://127.0.0.1:$port/metrics" | awk '$1 == "replay_commit_duration_seconds_count" {a = $2}
    $1 == "replay_commit_duration_seconds_bucket{le=\"0.01\"}" {b = $2} $1 == "replay_commit_duration_seconds_bucket{le=\"0.025\"}" {c = $2}
    END {print a, b, c}'
}

"$bin/replayd" --socket "$dir/s" --db "$dir/replay.sqlite" --http "127.0.0.1:$port" >"$dir/log" 2>&1 &
daemon=$!
for _ in $(seq 100); do [ -S "$dir/s" ] && ctl list >/dev/null 2>&1 && break; sleep 0.1; done
ctl create kv --capacity unlimited --compact
# A durable consumer at the start holds compaction back until it is deleted.
timeout 1 "$bin/replayctl" --socket "$dir/s" subscribe kv --durable hold >/dev/null 2>&1 || true

echo "fill: $("$dir/publisher" "$dir/s" kv $((events - rate * seconds)) "$keys")"
echo "without compaction: $("$dir/publisher" "$dir/s" kv $((rate * seconds)) "$keys" --rate "$rate")"
size "before compaction"

read -r all10 within10 within25 < <(commits)
ctl consumers kv --delete hold
started=$(date +%s.%N)
"$dir/publisher" "$dir/s" kv $((rate * 3600)) "$keys" --rate "$rate" >"$dir/during" &
publisher=$!
while sleep 5; do
  held=$(count)
  printf '  %5.0f s: %s events\n' "$(echo "$(date +%s.%N) - $started" | bc -l)" "$held"
  [ "$held" -lt 200000 ] && break
done
kill -TERM "$publisher"
wait "$publisher"
echo "during compaction: $(cat "$dir/during")"
read -r all now10 now25 < <(commits)
printf '  commits while publishing: %d, %d over 10 ms, %d over 25 ms\n' $((all - all10)) \
  $(((all - all10) - (now10 - within10))) $(((all - all10) - (now25 - within25)))
for _ in $(seq 600); do
  [ "$(count)" -le $((keys + keys / 10)) ] && break
  sleep 0.5
done
printf 'compacted to %s events %.1f s after compaction began; %s removed in all\n' "$(count)" \
  "$(echo "$(date +%s.%N) - $started" | bc -l)" "$(metric replay_events_compacted_total)"
size "after compaction"
