/*
 * Publishes keyed events to replayd over its Unix socket, paced or flat out, and prints how
 * long each waited for its `+OK` (sent to answered): the publisher of tools/compaction_bench.sh.
 * The keys are spread over KEYS by a multiplicative hash of the event's number, so each
 * key's events are scattered through the stream as real updates are; KEYS 0 publishes
 * events without a key (`--window 1`: one at a time, each waiting for its answer, the
 * single publish of docs/PERFORMANCE.md).
 *
 *   cc -O2 -o /tmp/keyed_publisher tools/keyed_publisher.c
 *   /tmp/keyed_publisher SOCKET STREAM COUNT KEYS [--rate N] [--size BYTES] [--window N]
 *
 * SIGTERM or SIGINT ends it early: it sends nothing more, waits for what it sent, and prints
 * the figures of those.
 *
 * --rate 0 (the default) publishes flat out with up to --window (default 1,000) PUBs
 * unanswered; a rate sends event i at start + i/rate, in 1 ms steps, whatever is
 * unanswered, so that a slow answer shows as latency and not as a lower rate (an open
 * loop, as wrk2 measures). It prints the rate reached and the latency percentiles, in µs.
 *
 * By hand in C: the bench needs 50,000 paced publishes a second and each one's latency
 * with nothing of its own in the way; a Python loop would measure Python.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stopping;

static void stop(int signal) {
    (void)signal;
    stopping = 1;
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s SOCKET STREAM COUNT KEYS [--rate N] [--size BYTES] [--window N]\n", argv[0]);
        return 2;
    }
    const char *path = argv[1], *stream = argv[2];
    long count = atol(argv[3]), keys = atol(argv[4]), rate = 0, size = 100, window = 1000;
    for (int i = 5; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--rate")) rate = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--size")) size = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--window")) window = atol(argv[i + 1]);
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }
    if (count < 1 || keys < 0 || size < 1 || size > 65536 || window < 1) { fprintf(stderr, "bad arguments\n"); return 2; }

    struct sigaction action = {.sa_handler = stop};
    sigaction(SIGINT, &action, NULL);
    sigaction(SIGTERM, &action, NULL);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    strncpy(address.sun_path, path, sizeof(address.sun_path) - 1);
    if (connect(fd, (struct sockaddr *)&address, sizeof(address)) != 0) { perror("connect"); return 1; }

    double *sent_at = malloc(sizeof(double) * count), *latency = malloc(sizeof(double) * count);
    char *payload = malloc(size);
    memset(payload, 'x', size);
    size_t out_capacity = 1 << 20, in_capacity = 1 << 16, out_length = 0, in_length = 0;
    char *out = malloc(out_capacity), *in = malloc(in_capacity);
    long sent = 0, answered = 0, errors = 0;
    double start = now_seconds();

    while (answered < count) {
        double now = now_seconds();
        long due = rate == 0 ? answered + window : (long)((now - start) * rate) + 1;
        if (due > count) due = count;
        if (stopping) {
            if (answered == sent) break;
            due = sent;
        }
        // Queue the PUBs due, as many as the buffer holds.
        while (sent < due && out_length + size + 128 < out_capacity) {
            if (keys > 0) {
                unsigned long key = ((unsigned long)sent * 2654435761UL) % (unsigned long)keys;
                out_length += snprintf(out + out_length, 128, "PUB %s key=k%lu %ld\r\n", stream, key, size);
            } else {
                out_length += snprintf(out + out_length, 128, "PUB %s %ld\r\n", stream, size);
            }
            memcpy(out + out_length, payload, size);
            out_length += size;
            out[out_length++] = '\r';
            out[out_length++] = '\n';
            sent_at[sent++] = now;
        }
        struct pollfd poller = {.fd = fd, .events = POLLIN | (out_length ? POLLOUT : 0)};
        poll(&poller, 1, 1);
        if ((poller.revents & POLLOUT) && out_length) {
            ssize_t wrote = send(fd, out, out_length, MSG_DONTWAIT);
            if (wrote > 0) {
                memmove(out, out + wrote, out_length - wrote);
                out_length -= wrote;
            }
        }
        if (poller.revents & (POLLIN | POLLHUP)) {
            ssize_t got = recv(fd, in + in_length, in_capacity - in_length, MSG_DONTWAIT);
            if (got == 0) { fprintf(stderr, "the daemon closed the connection\n"); return 1; }
            if (got < 0 && errno != EAGAIN) { perror("recv"); return 1; }
            if (got > 0) in_length += got;
            double answered_at = now_seconds();
            // Each line of an answer is one PUB's, in order.
            char *line = in, *end;
            while ((end = memchr(line, '\n', in_length - (line - in)))) {
                if (line[0] == '-') {
                    if (errors++ < 5) fprintf(stderr, "%.*s\n", (int)(end - line), line);
                }
                if (line[0] == '+' || line[0] == '-') {
                    latency[answered] = answered_at - sent_at[answered];
                    answered++;
                }
                line = end + 1;
            }
            in_length -= line - in;
            memmove(in, line, in_length);
        }
    }
    double elapsed = now_seconds() - start;
    count = answered;
    if (count == 0) { fprintf(stderr, "nothing was published\n"); return 1; }
    qsort(latency, count, sizeof(double), compare);
    printf("%ld events in %.2f s: %.0f/s; latency p50 %.0f us, p99 %.0f us, p99.9 %.0f us, max %.0f us; %ld errors\n", count, elapsed,
           count / elapsed, latency[count / 2] * 1e6, latency[count * 99 / 100] * 1e6, latency[count * 999 / 1000] * 1e6,
           latency[count - 1] * 1e6, errors);
    return errors ? 1 : 0;
}
