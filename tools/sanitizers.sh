#!/usr/bin/env bash
# Runs the test suite under ThreadSanitizer and AddressSanitizer, each in a build folder of
# its own (so the normal build stays cached). The end-to-end tests then start an
# instrumented replayd too.
#   tools/sanitizers.sh [thread|address]...   (default: both)
set -euo pipefail
cd "$(dirname "$0")/.."
for sanitizer in "${@:-thread address}"; do
  for s in $sanitizer; do
    echo "== swift test --sanitize=$s"
    TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" ASAN_OPTIONS="detect_leaks=0" \
      swift test --sanitize="$s" --scratch-path ".build-$s"
  done
done
