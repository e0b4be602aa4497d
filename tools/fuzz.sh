#!/usr/bin/env bash
# Fuzzes with libFuzzer (and AddressSanitizer) for a bounded time, then keeps the inputs
# that add coverage. Two targets:
#   commands  the socket protocol's decoder and the connection state machine
#   tokens    the HTTP door's Authorization header and token verification: no crash, and
#             no token accepted that its named key did not sign (TokenOracle)
#   tools/fuzz.sh [seconds] [commands|tokens]    (default 60 commands)
# New interesting inputs are added to Fuzz/corpus/<target>; a crash is written to
# Fuzz/crash-* and the script fails: add that file to the corpus as a regression.
# The token corpus is also replayed against the real daemon by TokenCorpusTests.
set -euo pipefail
cd "$(dirname "$0")/../Fuzz"
seconds="${1:-60}"
target="${2:-commands}"
case "$target" in
  commands) max_len=4096 ;;
  tokens) max_len=2048 ;;
  *) echo "usage: tools/fuzz.sh [seconds] [commands|tokens]" >&2; exit 64 ;;
esac
export FUZZ_TARGET="$target"
# A trap is the finding: libFuzzer reports it; the Swift backtracer under ASan only adds noise.
export SWIFT_BACKTRACE=enable=no
swift build --scratch-path .build/fuzz -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library -Xswiftc -DFUZZING --product ReplayFuzzer
work=$(mktemp -d)
cp "corpus/$target"/* "$work/"
.build/fuzz/debug/ReplayFuzzer "$work" -max_total_time="$seconds" -max_len="$max_len" -timeout=10 -print_final_stats=1
# Keep only the new inputs that add coverage (libFuzzer's merge).
.build/fuzz/debug/ReplayFuzzer -merge=1 "corpus/$target" "$work" 2>/dev/null
rm -rf "$work"
echo "fuzzing $target: no crash in ${seconds}s; corpus has $(ls "corpus/$target" | wc -l) inputs"
