/*
 * The ceiling SQLite itself puts on replay's publish path on this machine, measured from C
 * (a loop in Python measures Python: tools/sqlite_ceiling.py gave 272,000-331,000 events/s
 * where this gives 550,000 and more for the same layout).
 *
 * Replay's layout exactly: a fresh database made by the .sql files of migrations/, WAL, the given
 * synchronous mode; per transaction (BEGIN IMMEDIATE ... COMMIT) one prepared INSERT into
 * event_log per event, keyed (stream id << 40) | seq, and the UPDATE of each touched
 * stream's row, as replay's writer does. The events of a transaction are spread over the
 * streams in turn, as the writer's batches are when that many connections publish at once.
 * No socket, no framing, no acknowledgements: nothing replay's writer could skip, so no
 * publish figure of replay can pass this one. Each combination is measured in turn,
 * interleaved over rounds (the disk's moods fall on all alike); medians are printed.
 *
 *   cc -O2 -o /tmp/sqlite_ceiling tools/sqlite_ceiling.c -lsqlite3
 *   /tmp/sqlite_ceiling [--events 300000] [--rounds 3] [--sync full|normal]
 *                       [--streams 1,8] [--batches 16,100,1000] [--migrations migrations]
 *                       [--folder /tmp]
 */
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ceiling_common.h"
#include "sqlite_layout.h"

/* Events per second for `events` events over `streams` streams, `batch` per transaction. */
static double measure(const char *folder, const char *schema, const char *sync, long events, long streams, long batch) {
    char path[4096];
    snprintf(path, sizeof path, "%s/ceiling-%d-%ld-%ld.sqlite", folder, (int)getpid(), streams, batch);
    sqlite3_stmt *insert, *update;
    sqlite3 *db = open_layout(path, schema, sync, streams, &insert, &update);
    static const char payload[100] = {0};
    int64_t *last = calloc(streams + 1, sizeof *last);
    int64_t millis = 1795000000000;
    double start = seconds();
    long written = 0;
    while (written < events) {
        exec(db, "BEGIN IMMEDIATE");
        millis++;
        for (long i = 0; i < batch && written < events; i++, written++) {
            long stream = written % streams + 1;
            int64_t seq = ++last[stream];
            append_event(db, insert, stream, seq, millis, payload, sizeof payload);
        }
        long touched = batch < streams ? batch : streams;
        for (long t = 0; t < touched; t++) {
            long stream = (written - 1 - t) % streams + 1;
            update_stream(db, update, stream, last[stream], last[stream] * (int64_t)sizeof payload, millis);
        }
        exec(db, "COMMIT");
    }
    double rate = events / (seconds() - start);
    remove_layout(db, path, insert, update);
    free(last);
    return rate;
}

int main(int argc, char **argv) {
    long events = 300000, rounds = 3;
    const char *sync = "FULL", *migrations = "migrations", *folder = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    long streams[MAX_LIST] = {1, 8}, batches[MAX_LIST] = {16, 100, 1000};
    int stream_count = 2, batch_count = 3;
    for (int i = 1; i < argc; i++) {
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (!value) {
            fprintf(stderr, "usage: see the comment at the top of tools/sqlite_ceiling.c\n");
            return 64;
        }
        if (!strcmp(argv[i], "--events")) events = atol(value);
        else if (!strcmp(argv[i], "--rounds")) rounds = atol(value);
        else if (!strcmp(argv[i], "--sync")) sync = !strcmp(value, "normal") ? "NORMAL" : !strcmp(value, "off") ? "OFF" : "FULL";
        else if (!strcmp(argv[i], "--streams")) stream_count = parse_list(value, streams);
        else if (!strcmp(argv[i], "--batches")) batch_count = parse_list(value, batches);
        else if (!strcmp(argv[i], "--migrations")) migrations = value;
        else if (!strcmp(argv[i], "--folder")) folder = value;
        else {
            fprintf(stderr, "sqlite_ceiling: unknown option %s\n", argv[i]);
            return 64;
        }
        i++;
    }
    if (rounds < 1 || rounds > MAX_ROUNDS || events < 1) {
        fprintf(stderr, "sqlite_ceiling: --rounds 1...64 and --events above 0\n");
        return 64;
    }
    layout_tool = "sqlite_ceiling";
    char *schema = read_schema(migrations);
    static double results[MAX_LIST][MAX_LIST][MAX_ROUNDS];
    for (long round = 0; round < rounds; round++)
        for (int b = 0; b < batch_count; b++)
            for (int s = 0; s < stream_count; s++) results[s][b][round] = measure(folder, schema, sync, events, streams[s], batches[b]);
    printf("SQLite %s, WAL, synchronous=%s, 100-byte events, median of %ld interleaved rounds (events/s)\n", sqlite3_libversion(), sync, rounds);
    print_medians("streams", streams, stream_count, batches, batch_count, results, rounds);
    free(schema);
    return 0;
}
