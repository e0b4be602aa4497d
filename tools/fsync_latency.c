/*
 * How long one durable commit's flush takes on this machine, and how that changes when its
 * cores are busy: the floor under every p99 that waits for an fsync (replay's publishes,
 * ACKs and HTTP appends at --sync full; Redis at appendfsync always).
 *
 * Each step appends 8 KB (about what a group commit adds to SQLite's WAL) with pwrite and
 * calls fdatasync, as SQLite's commit does; the file wraps at 64 MB. --busy N starts N
 * processes that only spin, for the length of the run, so that the cores are as loaded as
 * they are under a load generator and a server; the percentiles of the flushes are printed.
 *
 *   cc -O2 -o /tmp/fsync_latency tools/fsync_latency.c
 *   /tmp/fsync_latency [--file /tmp/fsync_latency.dat] [--count 10000] [--busy 0]
 *
 * Run it under `nice -n -10` to see whether the caller's priority matters (on this machine it
 * does not: the completion of the flush waits on the kernel's own workers).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ceiling_common.h"

int main(int argc, char **argv) {
    const char *file = "/tmp/fsync_latency.dat";
    long count = 10000, busy = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--file")) file = argv[i + 1];
        else if (!strcmp(argv[i], "--count")) count = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--busy")) busy = atol(argv[i + 1]);
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }
    pid_t spinners[64];
    if (busy > 64) busy = 64;
    for (long i = 0; i < busy; i++) {
        spinners[i] = fork();
        if (spinners[i] == 0) for (volatile unsigned long n = 0;; n++) {}
    }
    int fd = open(file, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd < 0) { perror(file); return 1; }
    static char block[8192];
    memset(block, 'x', sizeof block);
    double *micros = malloc(count * sizeof *micros);
    off_t offset = 0;
    long over_millisecond = 0;
    for (long i = 0; i < count; i++) {
        double start = seconds();
        if (pwrite(fd, block, sizeof block, offset) != sizeof block || fdatasync(fd) != 0) { perror("write"); return 1; }
        micros[i] = (seconds() - start) * 1e6;
        if (micros[i] > 1000) over_millisecond++;
        offset = (offset + sizeof block) % (64 << 20);
    }
    for (long i = 0; i < busy; i++) { kill(spinners[i], SIGKILL); waitpid(spinners[i], NULL, 0); }
    close(fd);
    unlink(file);
    qsort(micros, count, sizeof *micros, compare_doubles);
    printf("fdatasync of 8 KB, %ld times, %ld spinning: p50 %.0f, p90 %.0f, p99 %.0f, p99.9 %.0f, max %.0f us; over 1 ms: %.2f%%\n",
           count, busy, micros[count / 2], micros[count * 90 / 100], micros[count * 99 / 100], micros[count * 999 / 1000],
           micros[count - 1], 100.0 * over_millisecond / count);
    return 0;
}
