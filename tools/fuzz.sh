#!/usr/bin/env bash
# Fuzzes the protocol decoder and the connection state machine with libFuzzer (and
# AddressSanitizer) for a bounded time, then replays the corpus without instrumentation.
#   tools/fuzz.sh [seconds]    (default 60)
# New interesting inputs are added to Fuzz/corpus/commands; a crash is written to
# Fuzz/crash-* and the script fails: add that file to the corpus as a regression.
set -euo pipefail
cd "$(dirname "$0")/../Fuzz"
seconds="${1:-60}"
swift build --scratch-path .build/fuzz -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library -Xswiftc -DFUZZING --product ReplayFuzzer
work=$(mktemp -d)
cp corpus/commands/* "$work/"
.build/fuzz/debug/ReplayFuzzer "$work" -max_total_time="$seconds" -max_len=4096 -timeout=10 -print_final_stats=1
# Keep only the new inputs that add coverage (libFuzzer's merge).
.build/fuzz/debug/ReplayFuzzer -merge=1 corpus/commands "$work" 2>/dev/null
rm -rf "$work"
echo "fuzzing: no crash in ${seconds}s; corpus has $(ls corpus/commands | wc -l) inputs"
