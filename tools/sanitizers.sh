#!/usr/bin/env bash
# Runs the test suite under ThreadSanitizer and AddressSanitizer, each in a build folder of
# its own (so the normal build stays cached). The end-to-end tests then start an
# instrumented replayd too.
#   tools/sanitizers.sh [thread|address]...   (default: both)
#
# A sanitizer makes everything 5-15 times slower. Swift Testing runs every test at once
# by default: under a sanitizer on 2 cores that is some 40 instrumented daemons sharing
# the CPU, and each test's own wall time (which its time limit and frame deadlines bound)
# becomes a lottery decided by the others. So at most REPLAY_SANITIZER_WIDTH tests (4)
# run at a time here; the total time stays about the same, the CPU work being the same.
set -euo pipefail
cd "$(dirname "$0")/.."
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH="${REPLAY_SANITIZER_WIDTH:-4}"
for sanitizer in "${@:-thread address}"; do
  for s in $sanitizer; do
    echo "== swift test --sanitize=$s"
    # The daemons the tests start inherit these (and the suppressions, see the file).
    TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/tools/tsan-suppressions.txt" ASAN_OPTIONS="detect_leaks=0" \
      swift test --sanitize="$s" --scratch-path ".build-$s"
  done
done
