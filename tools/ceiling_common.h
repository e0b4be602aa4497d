/*
 * What tools/sqlite_ceiling.c, tools/postgres_ceiling.c and tools/fsync_latency.c share:
 * their option lists, the clock, and the table of medians over interleaved rounds they print.
 */
#ifndef CEILING_COMMON_H
#define CEILING_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_LIST 16
#define MAX_ROUNDS 64

static inline double seconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec + now.tv_nsec / 1e9;
}

/* "1,8,100" into `out` (at most MAX_LIST); returns how many. */
static inline int parse_list(const char *text, long *out) {
    int n = 0;
    char *copy = strdup(text), *save = NULL;
    for (char *part = strtok_r(copy, ",", &save); part && n < MAX_LIST; part = strtok_r(NULL, ",", &save)) out[n++] = atol(part);
    free(copy);
    return n;
}

static inline int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static inline double median(double *values, long count) {
    qsort(values, count, sizeof(double), compare_doubles);
    return values[count / 2];
}

/* One row per `rows` value (labelled `row_label`), one column per batch size, each cell the
 * median of its rounds. */
static inline void print_medians(const char *row_label, const long *rows, int row_count, const long *batches, int batch_count,
                          double results[MAX_LIST][MAX_LIST][MAX_ROUNDS], long rounds) {
    printf("%-12s", row_label);
    for (int b = 0; b < batch_count; b++) {
        char label[32];
        snprintf(label, sizeof label, "%ld/txn", batches[b]);
        printf("%12s", label);
    }
    printf("\n");
    for (int r = 0; r < row_count; r++) {
        printf("%-12ld", rows[r]);
        for (int b = 0; b < batch_count; b++) printf("%12.0f", median(results[r][b], rounds));
        printf("\n");
    }
}

#endif
