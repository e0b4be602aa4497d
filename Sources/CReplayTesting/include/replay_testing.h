// The test support's C parts: process descriptors, which Glibc's Swift module does not
// offer (the suite's parallelism, test_parallelism.c, is set before main: nothing to call).
#ifndef REPLAY_TESTING_H
#define REPLAY_TESTING_H

#include <sys/types.h>

/// Sends `signal` to the process of `pidfd` (pidfd_send_signal(2)): 0, or -1 with errno
/// ESRCH once it has exited.
int replay_pidfd_send_signal(int pidfd, int signal);

/// Whether the process of `pidfd` has exited (its descriptor polls readable then, zombie or
/// reaped).
int replay_pidfd_exited(int pidfd);

#endif
