// The test support's C parts: the suite's parallelism (set before main, nothing to call) and
// process descriptors, which Glibc's Swift module does not offer.
#ifndef REPLAY_TESTING_H
#define REPLAY_TESTING_H

#include <sys/types.h>

/// The most test cases Swift Testing runs at once unless the environment says otherwise:
/// this many per core (test_parallelism.c).
#define REPLAY_TESTS_PER_CORE 4

/// Sends `signal` to the process of `pidfd` (pidfd_send_signal(2)): 0, or -1 with errno
/// ESRCH once it has exited.
int replay_pidfd_send_signal(int pidfd, int signal);

/// Whether the process of `pidfd` has exited (its descriptor polls readable then, zombie or
/// reaped).
int replay_pidfd_exited(int pidfd);

#endif
