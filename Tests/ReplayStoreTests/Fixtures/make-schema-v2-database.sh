#!/usr/bin/env bash
# How schema-v2-database.sqlite was made: by the release whose schema ends at migration
# 0002 (commit 97e83d5), through its own replayd and replayctl, so the migration test
# converts a database exactly as that release wrote it. Kept for the record; the fixture
# is committed and this is not run by the tests.
#   make-schema-v2-database.sh BIN_DIR OUT.sqlite   (BIN_DIR holds that release's binaries)
set -euo pipefail
bin=$1 out=$2
work=$(mktemp -d)
"$bin/replayd" --socket "$work/s.sock" --db "$work/replay.sqlite" 2>"$work/log" &
pid=$!
for _ in $(seq 1 250); do [ -S "$work/s.sock" ] && break; sleep 0.02; done
ctl() { "$bin/replayctl" --socket "$work/s.sock" "$@"; }
ctl create orders --capacity unlimited
ctl send orders '{"id":1}' '{"id":2}' '{"id":3}' >/dev/null
sleep 0.01; ctl send orders '{"id":4}' 'a line with spaces' >/dev/null
ctl create small --capacity 3
seq 1 10 | ctl send small >/dev/null
ctl create sized --capacity unlimited --max-bytes 100000 --max-age 7d
ctl send sized 'x' >/dev/null
ctl send done one two >/dev/null
ctl complete done
ctl send broken only >/dev/null
ctl fail broken 'disk on fire'
ctl create feed --source 'echo hi' --connect lazy --framing lines --restart on-failure --max-restarts 2 --grace 3s
ctl create empty --capacity 5
kill -TERM $pid; wait $pid
cp "$work/replay.sqlite" "$out"
rm -rf "$work"
