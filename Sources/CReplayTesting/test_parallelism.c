// Bounds how many tests the suite runs at once, before Swift Testing reads its settings.
//
// Swift Testing runs every test of the process at once unless told otherwise. This suite's
// end-to-end tests each start real daemons, PostgreSQL databases and browsers, so on two
// cores an unbounded run had all 642 tests contending for the CPU: run queues of 10 to 138,
// and tests failing on their own 10 s connect timeouts and time limits, none of which
// failed alone. Swift Testing's bound on the width (`SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH`,
// from Swift 6.3) queues a test before its time limit starts, so a queued test loses
// nothing. SwiftPM 6.3 has no flag that passes the width through, and the README's test
// command is plain `swift test`, so the width is set here: a constructor runs before the
// test binary's main, which is where Swift Testing reads its environment. A width already
// in the environment wins.
//
// Four tests per core: on two cores the suite passed at 8 in 173 s, where the unbounded run
// took 220 s and failed, and 4 took longer (203 s): most tests wait on processes and sockets.
#include "replay_testing.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/// The most test cases Swift Testing runs at once unless the environment says otherwise:
/// this many per core.
#define REPLAY_TESTS_PER_CORE 4

__attribute__((constructor)) static void replay_bound_test_parallelism(void) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    char width[32];
    snprintf(width, sizeof width, "%ld", (cores > 0 ? cores : 1) * REPLAY_TESTS_PER_CORE);
    setenv("SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH", width, 0);
}
