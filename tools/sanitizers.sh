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
#
# A daemon a test starts writes its stderr to a log in the test's temp folder, which goes
# with the test: a report there would be lost, and the test would see only its daemon
# gone ("the server closed the connection"). So every report, the test process's and each
# daemon's, is written to a file of its own under REPLAY_SANITIZER_REPORTS (log_path), and
# the run fails if any was written, even when every test passed.
set -euo pipefail
cd "$(dirname "$0")/.."
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH="${REPLAY_SANITIZER_WIDTH:-4}"
reports="${REPLAY_SANITIZER_REPORTS:-$PWD/.build-sanitizer-reports}"
for sanitizer in "${@:-thread address}"; do
  for s in $sanitizer; do
    echo "== swift test --sanitize=$s"
    rm -rf "$reports/$s" && mkdir -p "$reports/$s"
    status=0
    # The daemons the tests start inherit these (and the suppressions, see the file).
    TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/tools/tsan-suppressions.txt log_path=$reports/$s/report" \
      ASAN_OPTIONS="detect_leaks=0 log_path=$reports/$s/report" \
      swift test --sanitize="$s" --scratch-path ".build-$s" || status=$?
    if compgen -G "$reports/$s/report*" > /dev/null; then
      echo "== $s: reports written (one file per process, by pid):"
      for report in "$reports/$s"/report*; do echo "--- $report"; cat "$report"; done
      status=1
    fi
    [ "$status" -eq 0 ] || exit "$status"
  done
done
