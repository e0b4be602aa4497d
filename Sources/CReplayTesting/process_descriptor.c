// Process descriptors for the tests' children. A test that signals a child by pid can hit
// another process: once the child has exited and been reaped, its pid is free, and with
// Linux's default pid_max of 32768 a full suite (thousands of daemons, shells and browser
// processes) reuses pids within minutes, and a SIGUSR1 or SIGKILL meant for a daemon that
// had just exited could reach whatever process took its pid. A pidfd names one process for
// good, and signalling an exited one is ESRCH. Glibc 2.36 has wrappers, but its Swift
// module does not import <sys/pidfd.h>, and Swift cannot call the variadic syscall(2):
// hence these two.
#define _GNU_SOURCE
#include "replay_testing.h"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

int replay_pidfd_send_signal(int pidfd, int signal) { return (int)syscall(SYS_pidfd_send_signal, pidfd, signal, NULL, 0); }

int replay_pidfd_exited(int pidfd) {
    struct pollfd ready = {.fd = pidfd, .events = POLLIN};
    return poll(&ready, 1, 0) > 0;
}
