/*
 * How long one durable commit's flush takes on this machine, and how that changes when its
 * cores are busy: the floor under every p99 that waits for an fsync (replay's publishes,
 * ACKs and HTTP appends at --sync full; Redis at appendfsync always).
 *
 * Each step appends 8 KB (about what a group commit adds to SQLite's WAL; --size changes it)
 * with pwrite and calls fdatasync, as SQLite's commit does; the file wraps at 64 MB.
 * --rewrite writes into a file already 64 MB long instead, so that no flush has a new
 * length to record: SQLite's WAL once it has wrapped after a checkpoint. --busy N starts N
 * processes that only spin, for the length of the run, so that the cores are as loaded as
 * they are under a load generator and a server; the percentiles of the flushes are printed.
 *
 *   cc -O2 -o /tmp/fsync_latency tools/fsync_latency.c
 *   /tmp/fsync_latency [--file /tmp/fsync_latency.dat] [--count 10000] [--busy 0] [--size 8192]
 *                      [--rewrite]
 *
 * An appended flush's time grows with what it writes, a rewritten one's hardly: on the
 * 2-core machine docs/PERFORMANCE.md describes, appends of 128 bytes, 4 KiB and
 * 16 KiB took 119, 162 and 210 µs at the median; the same rewritten, 80, 95 and 91 µs.
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
    long count = 10000, busy = 0, size = 8192;
    int rewrite = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rewrite")) { rewrite = 1; continue; }
        if (i + 1 >= argc) { fprintf(stderr, "%s needs a value\n", argv[i]); return 2; }
        if (!strcmp(argv[i], "--file")) file = argv[i + 1];
        else if (!strcmp(argv[i], "--count")) count = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--busy")) busy = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--size")) size = atol(argv[i + 1]);
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
        i++;
    }
    if (size < 1 || size > (1 << 20) || count < 1) { fprintf(stderr, "--size takes 1 to 1048576 bytes, --count at least 1\n"); return 2; }
    pid_t spinners[64];
    if (busy > 64) busy = 64;
    for (long i = 0; i < busy; i++) {
        spinners[i] = fork();
        if (spinners[i] == 0) for (volatile unsigned long n = 0;; n++) {}
    }
    int fd = open(file, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd < 0) { perror(file); return 1; }
    char *block = malloc(size);
    memset(block, 'x', size);
    const off_t wrap = (off_t)64 << 20;
    if (rewrite) {
        /* Written out and flushed once, so its blocks and its length are on disk before the run. */
        for (off_t at = 0; at < wrap; at += size)
            if (pwrite(fd, block, size, at) != size) { perror("write"); return 1; }
        if (fsync(fd) != 0) { perror("fsync"); return 1; }
    }
    double *micros = malloc(count * sizeof *micros);
    off_t offset = 0;
    long over_millisecond = 0;
    for (long i = 0; i < count; i++) {
        double start = seconds();
        if (pwrite(fd, block, size, offset) != size || fdatasync(fd) != 0) { perror("write"); return 1; }
        micros[i] = (seconds() - start) * 1e6;
        if (micros[i] > 1000) over_millisecond++;
        offset = (offset + size) % wrap;
    }
    for (long i = 0; i < busy; i++) { kill(spinners[i], SIGKILL); waitpid(spinners[i], NULL, 0); }
    close(fd);
    unlink(file);
    qsort(micros, count, sizeof *micros, compare_doubles);
    printf("fdatasync of %ld bytes (%s), %ld times, %ld spinning: p50 %.0f, p90 %.0f, p99 %.0f, p99.9 %.0f, max %.0f us; over 1 ms: %.2f%%\n",
           size, rewrite ? "rewritten" : "appended", count, busy, micros[count / 2], micros[count * 90 / 100], micros[count * 99 / 100], micros[count * 999 / 1000],
           micros[count - 1], 100.0 * over_millisecond / count);
    return 0;
}
